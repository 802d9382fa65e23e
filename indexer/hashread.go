package indexer

// The hash run's readers: each task is read from one of its paths, checked
// against the index's row, and turned into a result for the writer.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/dupefs/dupefs/store"
)

// read performs one task. Its rows are the links of one inode: the first
// path that still names the inode is read, one that is gone or now holds
// another file is passed over for the next (a hard link whose sibling was
// deleted under the reader is still read).
func (h *hashRun) read(ctx context.Context, t task, buf []byte) result {
	res := result{rows: t.rows}
	if err := ctx.Err(); err != nil {
		return h.failed(res, err)
	}
	if h.ix.hashLimit != nil {
		if err := h.ix.hashLimit.Wait(ctx); err != nil {
			return h.failed(res, err)
		}
	}
	var err error
	for _, r := range t.rows {
		var got result
		got, err = h.readPath(ctx, t.kind, r, buf)
		if err == nil {
			got.rows = t.rows
			return got
		}
		res.read = res.read || got.read
		if !errors.Is(err, errNotThere) && !errors.Is(err, errOtherFile) {
			break
		}
	}
	return h.failed(res, err)
}

// failed turns an error of a read into a result: a file that changed,
// vanished or was replaced under the reader is queued again (its row is
// not as the index says; the next scan records what it is now), anything
// else (permissions, I/O) fails.
func (h *hashRun) failed(res result, err error) result {
	if isChange(err) {
		res.outcome = gotChange
		switch {
		case h.quiet:
		case errors.Is(err, errNotThere):
			h.vanished.Add(1)
		default:
			h.changed.Add(1)
		}
	} else {
		res.outcome = gotFailure
	}
	res.msg = err.Error()
	return res
}

// openRow opens the file of row r to read it whole or its ends, noting the
// read in the read log and the progress; a file that is gone is
// errNotThere.
func (h *hashRun) openRow(r *store.HashRow, whole bool) (*rawFile, error) {
	if whole {
		h.ix.logRead("full", r.Path)
	} else {
		h.ix.logRead("prefix", r.Path)
	}
	h.ix.testHook("open", r.Path)
	f, err := openFile(r.Path)
	if err != nil {
		if isNotExist(err) {
			err = fmt.Errorf("%w: %w", errNotThere, err)
		}
		return nil, err
	}
	h.ix.cfg.Progress.FilesRead.Add(1)
	return f, nil
}

// rowID is what the index says of a row's file.
func rowID(r *store.HashRow) fileID {
	return fileID{size: r.Size, mtimeNS: r.MtimeNS, dev: r.Dev, ino: r.Ino}
}

// readPath reads the file of row r for a task of kind.
func (h *hashRun) readPath(ctx context.Context, kind taskKind, r *store.HashRow, buf []byte) (result, error) {
	var res result
	want := rowID(r)
	whole := kind == taskFull || r.Size <= SmallFile
	f, err := h.openRow(r, whole)
	if err != nil {
		return res, err
	}
	defer f.Close()
	res.read = true
	if whole {
		if r.Size > SmallFile {
			release, err := h.ix.spindles.acquire(ctx, r.Dev, r.Path)
			if err != nil {
				return res, err
			}
			defer release()
		}
		sum, err := h.ix.fullHash(ctx, f, r.Size, h.algo, buf)
		if err != nil {
			return res, err
		}
		res.outcome, res.sum, res.prefix, res.bytes = gotContent, sum, r.Prefix, r.Size
	} else {
		if h.ix.bytesLimit != nil {
			if err := h.ix.bytesLimit.WaitN(ctx, 2*prefixBlock); err != nil {
				return res, err
			}
		}
		ph, err := prefixHash(f, r.Size, buf)
		if err != nil {
			return res, err
		}
		h.ix.cfg.Progress.BytesRead.Add(2 * prefixBlock)
		res.outcome, res.prefix, res.bytes = gotPrefix, sql.NullInt64{Int64: ph, Valid: true}, 2*prefixBlock
	}
	h.ix.testHook("read", r.Path)
	return res, checkUnchanged(f, want)
}
