package fusefs

import (
	"context"
	"strconv"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"

	"github.com/dupefs/dupefs/store"
)

// watch polls PRAGMA data_version, which moves with every commit by any
// connection — the indexer of this process and `dupefs index` in another —
// and tells the kernel what changed: the groups of the change feed
// (contents.change_seq) lose their cached entries and attributes. It runs
// in its own goroutine: notifying from a FUSE handler deadlocks.
func (f *FS) watch(ctx context.Context, w *store.Watcher, seq, thumbSeq int64) {
	defer w.Close()
	t := time.NewTicker(f.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := w.Changed(ctx)
		if err != nil {
			if ctx.Err() == nil {
				f.cfg.Logf("dupefs: watch the index: %v", err)
			}
			continue
		}
		if !changed {
			continue
		}
		f.statusChanged()
		seq = f.applyChanges(ctx, seq)
		thumbSeq = f.applyThumbChanges(ctx, thumbSeq)
	}
}

// startWatch takes the watcher's baseline (data_version and the last
// change) before the mount serves anything, so no commit after it goes
// unseen.
func (f *FS) startWatch() (w *store.Watcher, seq, thumbSeq int64, err error) {
	ctx, cancel := dbctx()
	defer cancel()
	w, err = f.db.NewWatcher(ctx)
	if err != nil {
		return nil, 0, 0, err
	}
	if seq, _, err = f.db.LastChange(ctx); err == nil {
		thumbSeq, _, err = f.db.LastThumbChange(ctx)
	}
	if err != nil {
		w.Close()
		return nil, 0, 0, err
	}
	return w, seq, thumbSeq, nil
}

// applyChanges notifies the kernel of every change after seq and returns
// the last one seen.
func (f *FS) applyChanges(ctx context.Context, seq int64) int64 {
	any := false
	for {
		qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cs, err := f.db.ChangesSince(qctx, seq, 1000)
		cancel()
		if err != nil {
			f.cfg.Logf("dupefs: read changes: %v", err)
			return seq
		}
		for _, c := range cs {
			f.invalidate(c)
			seq, any = c.Seq, true
		}
		if len(cs) < 1000 {
			break
		}
	}
	if any {
		// The top folders' mtimes moved; their listings are not cached.
		for _, n := range []*fs.Inode{f.byHash, f.bySize, &f.root.Inode} {
			n.NotifyContent(0, 0)
		}
	}
	return seq
}

// invalidate drops what the kernel may hold of one changed group: its
// entry in /by-hash and in /by-size/<bytes> (a new group may sit in a
// negative entry, a gone one in a positive one), the attributes of its
// folders, and the entries of its copies the kernel looked up. Errors mean
// the kernel had nothing cached and are ignored.
func (f *FS) invalidate(c store.Change) {
	k := key(c.GroupRef)
	f.byHash.NotifyEntry(k)
	if gd := f.byHash.GetChild(k); gd != nil {
		for name := range gd.Children() {
			gd.NotifyEntry(name)
		}
		gd.NotifyContent(0, 0)
	}
	f.invalidateThumb(k)
	size := strconv.FormatInt(c.Size, 10)
	f.bySize.NotifyEntry(size)
	if sd := f.bySize.GetChild(size); sd != nil {
		sd.NotifyEntry(k)
		sd.NotifyContent(0, 0)
	}
}

// applyThumbChanges notifies the kernel of every thumbnail that became
// ready, failed or is being made again after seq, and returns the last
// change seen.
func (f *FS) applyThumbChanges(ctx context.Context, seq int64) int64 {
	any := false
	for {
		qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cs, err := f.db.ThumbChangesSince(qctx, seq, 1000)
		cancel()
		if err != nil {
			f.cfg.Logf("dupefs: read thumbnail changes: %v", err)
			return seq
		}
		for _, c := range cs {
			f.invalidateThumb(c.Key)
			seq, any = c.Seq, true
		}
		if len(cs) < 1000 {
			break
		}
	}
	if any {
		f.thumbs.NotifyContent(0, 0)
	}
	return seq
}

// invalidateThumb drops the kernel's entry of a group's thumbnail (a new
// one may sit in a negative entry) and the pages it kept of it.
func (f *FS) invalidateThumb(k string) {
	name := k + ".jpg"
	f.thumbs.NotifyEntry(name)
	if n := f.thumbs.GetChild(name); n != nil {
		n.NotifyContent(0, 0)
	}
}
