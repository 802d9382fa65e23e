package indexer

import (
	"cmp"
	"context"
	"runtime"
	"slices"

	"github.com/dupefs/dupefs/store"
)

// folderRows are a root's folder rows, read in one query (FoldersOfRoot)
// beside the start of a rescan's walk rather than before it: on /usr (17k
// folders) the query takes a CPU for a tenth of a second, while the walk's
// readers could use both. A folder read before the rows are there is read
// from disk only; the committer, which waits for the rows before its first
// folder, looks its rows up when it comes to it (deferred).
type folderRows struct {
	ready chan struct{} // closed once read
	// early bounds the folders read at once until then, to a CPU less
	// than the process has: among eight readers the query had a ninth
	// of the CPUs, and took half a second.
	early    chan struct{}
	err      error
	byParent map[int64][]store.FolderRow
	byPath   map[string]*store.FolderRow
}

// readFolderRows starts reading the folder rows of root.
func readFolderRows(ctx context.Context, ix *Indexer, root store.Root) *folderRows {
	r := &folderRows{ready: make(chan struct{}), early: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1))}
	go func() {
		defer close(r.ready)
		ix.testHook("folder rows", "")
		rows, err := ix.db.FoldersOfRoot(ctx, root.ID, int(root.FolderCount)+1)
		if err != nil {
			r.err = err
			return
		}
		// By parent, each parent's rows a part of the one slice.
		slices.SortFunc(rows, func(a, b store.FolderRow) int { return cmp.Compare(a.ParentID, b.ParentID) })
		r.byParent = map[int64][]store.FolderRow{}
		r.byPath = make(map[string]*store.FolderRow, len(rows))
		for i := 0; i < len(rows); {
			j := i
			for ; j < len(rows) && rows[j].ParentID == rows[i].ParentID; j++ {
				r.byPath[rows[j].Path] = &rows[j]
			}
			r.byParent[rows[i].ParentID] = rows[i:j:j]
			i = j
		}
	}()
	return r
}

// loaded reports whether the rows are there (or failed to be read).
func (r *folderRows) loaded() bool {
	select {
	case <-r.ready:
		return true
	default:
		return false
	}
}

// usable reports whether the rows are there and were read whole.
func (r *folderRows) usable() bool { return r != nil && r.loaded() && r.err == nil }

// hold holds one of the places of readers that start before the rows are
// there, if they are not; the reader calls the function it returns when
// done.
func (r *folderRows) hold() (release func()) {
	if r == nil || r.loaded() {
		return func() {}
	}
	select {
	case r.early <- struct{}{}:
		return func() { <-r.early }
	case <-r.ready:
		return func() {}
	}
}

// wait waits for the rows and returns the error reading them met.
func (r *folderRows) wait(ctx context.Context) error {
	select {
	case <-r.ready:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// join waits for the read to end, whatever the context.
func (r *folderRows) join() {
	if r != nil {
		<-r.ready
	}
}
