package indexer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dupefs/dupefs/indexer/thumb"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// Error codes a Thumbnailer stores besides those of package thumb.
const (
	CodeNotAGroup     = "not_a_group"          // the content stopped being a duplicate
	CodeSourceMissing = "source_missing"       // no copy left to read
	CodeOutsideRoots  = "source_outside_roots" // every copy resolves outside the indexed roots
	CodeSourceChanged = "source_changed"       // every copy differs from what the index saw
)

// makeOne makes the thumbnail of a claimed row and finishes the row. It
// returns an error only for what stops the pass (the index or the cache
// failing); the failure of one file is stored in its row.
func (t *Thumbnailer) makeOne(ctx context.Context, row store.Thumb, lease store.Lease) error {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := t.heartbeat(wctx, lease, cancel)
	res, code, msg := t.render(wctx, row)
	stop()
	fctx := context.WithoutCancel(ctx)
	switch {
	case errors.Is(context.Cause(wctx), store.ErrLeaseLost):
		t.cfg.Warn(fmt.Sprintf("thumbnail of %s: lease lost; another worker has it", row.Key))
		return nil
	case ctx.Err() != nil:
		if err := t.db.ReleaseThumb(fctx, lease); err != nil && !errors.Is(err, store.ErrLeaseLost) {
			return err
		}
		return nil
	case code != "":
		t.cfg.Progress.ThumbsFailed.Add(1)
		if code != thumb.CodeFFmpegMissing || !t.ffmpegWarned.Swap(true) {
			t.cfg.Warn(fmt.Sprintf("thumbnail of %s failed: %s: %s", row.Key, code, msg))
		}
		return ignoreLost(t.db.FinishThumbFailed(fctx, lease, code, msg, t.backoff(code, row.ErrorCount)))
	}
	size, err := t.write(row.Key, res.JPEG)
	if err != nil {
		if rerr := t.db.ReleaseThumb(fctx, lease); rerr != nil && !errors.Is(rerr, store.ErrLeaseLost) {
			err = errors.Join(err, rerr)
		}
		return err
	}
	t.cfg.Progress.ThumbsMade.Add(1)
	return ignoreLost(t.db.FinishThumbReady(fctx, lease, res.Width, res.Height, size))
}

func ignoreLost(err error) error {
	if errors.Is(err, store.ErrLeaseLost) {
		return nil
	}
	return err
}

// backoff is how long a failed thumbnail waits before it is retried. A
// missing ffmpeg waits for nothing: the row is requeued once ffmpeg is
// found.
func (t *Thumbnailer) backoff(code string, failures int) time.Duration {
	if code == thumb.CodeFFmpegMissing {
		return 0
	}
	d := t.cfg.FailBackoff << min(failures, 10)
	return min(d, 7*24*time.Hour)
}

// heartbeat extends the lease every TTL/3 until the returned stop is
// called; it cancels ctx with ErrLeaseLost when the lease is gone.
func (t *Thumbnailer) heartbeat(ctx context.Context, l store.Lease, cancel context.CancelCauseFunc) (stop func()) {
	return store.KeepLease(ctx, t.cfg.LeaseTTL/3, cancel, func(ctx context.Context) error {
		err := t.db.Renew(ctx, l)
		if err != nil && !errors.Is(err, store.ErrLeaseLost) && ctx.Err() == nil {
			t.cfg.Warn(fmt.Sprintf("thumbnail heartbeat: %v", err))
		}
		return err
	})
}

// render makes the thumbnail from the first copy that can be read. It
// returns a failure code and message instead when none can.
func (t *Thumbnailer) render(ctx context.Context, row store.Thumb) (thumb.Result, string, string) {
	if !row.Group {
		return thumb.Result{}, CodeNotAGroup, row.Key + " is no longer a duplicate group"
	}
	srcs, err := t.db.ThumbSources(ctx, row.ContentID)
	if err != nil {
		return thumb.Result{}, thumb.CodeIO, err.Error()
	}
	code, msg := CodeSourceMissing, "no copy of "+row.Key+" is left"
	for _, s := range srcs {
		path, err := t.roots.resolve(s.Path)
		if errors.Is(err, fs.ErrNotExist) {
			code, msg = CodeSourceMissing, err.Error()
			continue
		}
		if err != nil {
			code, msg = CodeOutsideRoots, err.Error()
			continue
		}
		if err := sameFile(path, s); err != nil {
			code, msg = CodeSourceChanged, err.Error()
			continue
		}
		if err := t.reserveRead(ctx, s.Size); err != nil {
			return thumb.Result{}, thumb.CodeIO, err.Error()
		}
		res, err := thumb.Make(ctx, path, thumb.Options{Budget: t.budget, FFmpeg: t.cfg.FFmpeg, MaxPixels: t.cfg.MaxPixels})
		if err == nil {
			return res, "", ""
		}
		var te *thumb.Error
		if !errors.As(err, &te) {
			return thumb.Result{}, thumb.CodeIO, err.Error()
		}
		if te.Code != thumb.CodeIO {
			return thumb.Result{}, te.Code, te.Message
		}
		code, msg = te.Code, te.Message // try the next copy
	}
	return thumb.Result{}, code, msg
}

// sameFile checks that path is a regular file with the size and mtime the
// index saw, so a thumbnail is never made of other content than its
// group's.
func sameFile(path string, s store.ThumbSource) error {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return fmt.Errorf("%s: not a regular file", path)
	case st.Size != s.Size || st.Mtim.Nano() != s.MtimeNS:
		return fmt.Errorf("%s: changed since it was indexed", path)
	}
	return nil
}

// reserveRead waits for a slot of the global I/O limiter for n bytes.
func (t *Thumbnailer) reserveRead(ctx context.Context, n int64) error {
	if t.cfg.MaxBytesPerSec <= 0 {
		return nil
	}
	cost := time.Duration(float64(n) / float64(t.cfg.MaxBytesPerSec) * float64(time.Second))
	at, err := t.db.ReserveIO(ctx, store.IOBucketThumbs, max(cost, time.Millisecond))
	if err != nil {
		return err
	}
	if wait := time.Until(at); wait > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	return nil
}

// write puts a thumbnail in the cache atomically: a temporary file in the
// same directory, synced, then renamed over the final name.
func (t *Thumbnailer) write(key string, data []byte) (int64, error) {
	name, err := naming.ThumbFileName(key)
	if err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(t.cfg.Dir, ".tmp-*.jpg")
	if err != nil {
		return 0, fmt.Errorf("write thumbnail: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(t.cfg.Dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("write thumbnail %s: %w", name, err)
	}
	return int64(len(data)), nil
}

// verifyCache makes again the ready thumbnails whose file is gone or has
// another size than recorded, and removes temporary files that a killed
// process left over an hour ago.
func (t *Thumbnailer) verifyCache(ctx context.Context) error {
	var after int64
	for {
		rows, err := t.db.ThumbsPage(ctx, after, 1000)
		if err != nil {
			return err
		}
		for _, r := range rows {
			after = r.ID
			if r.Status != store.ThumbReady {
				continue
			}
			name, err := naming.ThumbFileName(r.Key)
			if err != nil {
				return err
			}
			fi, err := os.Stat(filepath.Join(t.cfg.Dir, name))
			if err == nil && fi.Size() == r.BytesSize {
				continue
			}
			if err := t.db.RemakeThumb(ctx, r.ID); err != nil {
				return err
			}
		}
		if len(rows) < 1000 {
			break
		}
	}
	ents, err := os.ReadDir(t.cfg.Dir)
	if err != nil {
		return fmt.Errorf("read thumbnail cache: %w", err)
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".tmp-") || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.Remove(filepath.Join(t.cfg.Dir, e.Name()))
		}
	}
	return nil
}

// cleanup schedules the cleanup of thumbnails whose content is no longer a
// group and runs the due ones. It returns how many thumbnails it removed.
func (t *Thumbnailer) cleanup(ctx context.Context) (int, error) {
	if _, err := t.db.ScheduleThumbCleanups(ctx, t.cfg.CleanupDelay); err != nil {
		return 0, err
	}
	n := 0
	for ctx.Err() == nil {
		c, err := t.db.ClaimThumbCleanup(ctx, t.owner, t.cfg.LeaseTTL)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return n, err
		}
		removed, err := t.db.FinishThumbCleanup(ctx, c, func() error {
			name, err := naming.ThumbFileName(c.Key)
			if err != nil {
				return err
			}
			err = os.Remove(filepath.Join(t.cfg.Dir, name))
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		})
		if err := ignoreLost(err); err != nil {
			return n, err
		}
		if removed {
			n++
			t.cfg.Progress.ThumbsCleaned.Add(1)
		}
	}
	return n, nil
}
