package indexer

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// Targeted scans: the watcher (package indexer/watch) knows which folders
// changed, and asks for those only. A targeted scan is a scan job of the
// root like any other (one lease, fenced batches), whose checkpoint lists
// the folders: each is read and diffed as a full scan would, its known
// subfolders are left alone (their own events name them), and folders new
// below it (or back from missing) are walked whole.

// Rescan queues a targeted scan of folders (absolute paths under the
// root). It merges them into a targeted scan that waits already; a full
// scan that has not started covers them. It reports false when a scan of
// the root is running: the caller keeps the folders and tries again.
func (ix *Indexer) Rescan(ctx context.Context, rootID int64, folders []string) (bool, error) {
	v, err := ix.db.EnqueueScanWith(ctx, rootID, func(status, checkpoint string) (string, store.ScanMerge) {
		var cp scanCheckpoint
		if checkpoint != "" {
			if err := json.Unmarshal([]byte(checkpoint), &cp); err != nil {
				return "", store.MergeBusy
			}
		}
		switch {
		case status == store.StatusRunning:
			return "", store.MergeBusy
		case status != "" && len(cp.Targets) == 0 && cp.ScanID == 0:
			return "", store.MergeCovered // a full scan not begun yet
		case status != "" && len(cp.Targets) == 0:
			return "", store.MergeBusy // a full scan to be resumed
		}
		have := map[string]bool{}
		for _, t := range cp.Targets {
			have[string(t)] = true
		}
		for _, f := range folders {
			if !have[f] {
				have[f] = true
				cp.Targets = append(cp.Targets, []byte(f))
			}
		}
		b, _ := json.Marshal(scanCheckpoint{Targets: cp.Targets})
		return string(b), store.MergeWrite
	})
	return v != store.MergeBusy, err
}

// walkTargets scans each target folder in turn: the nearest folder the
// index knows live and the disk still holds, so a new folder is found by
// its parent and a deleted one is marked missing by its parent.
func (s *scanRun) walkTargets(ctx context.Context) error {
	targets := make([]string, 0, len(s.cp.Targets))
	for _, t := range s.cp.Targets {
		targets = append(targets, string(t))
	}
	// Parents first: a parent's scan may mark a target missing.
	slices.SortFunc(targets, func(a, b string) int { return dfsCompare(a, b) })
	done := map[string]bool{}
	for _, t := range targets {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.w.leftOut(t) {
			continue // the index may hold it from an older dupefs: never walk it
		}
		row, ok, err := s.nearestFolder(t)
		if err != nil {
			return err
		}
		if !ok || done[row.Path] {
			continue
		}
		done[row.Path] = true
		rel := strings.TrimPrefix(strings.TrimPrefix(row.Path, s.root.Path), "/")
		n := newNode(rel, row.Path, modeFull, false, nil)
		n.dbRow, n.shallow = &row, true
		if err := s.walkFrom(ctx, n, row.ParentID); err != nil {
			return err
		}
	}
	return nil
}

// nearestFolder climbs from dir to the first folder under the root that
// the index holds live and that is a folder on disk.
func (s *scanRun) nearestFolder(dir string) (store.FolderRow, bool, error) {
	for naming.Within(s.root.Path, dir) {
		row, err := s.ix.db.FolderByPath(s.w.dbctx, dir)
		switch {
		case err == nil && !row.Missing && row.RootID == s.root.ID:
			var st unix.Stat_t
			if unix.Lstat(dir, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				return row, true, nil
			}
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return row, false, err
		}
		if dir == s.root.Path {
			break
		}
		dir = filepath.Dir(dir)
	}
	return store.FolderRow{}, false, nil
}

// completeTargets ends a targeted scan: the root's totals and last scan
// stay those of its last full scan.
func (s *scanRun) completeTargets(ctx context.Context) error {
	err := s.ix.db.Write(ctx, func(tx *store.Tx) error {
		if err := tx.Fence(s.lease); err != nil {
			return err
		}
		if err := tx.SetCheckpoint(s.lease, "", s.cp.Counts.FilesSeen); err != nil {
			return err
		}
		return tx.Finish(s.lease, store.StatusCompleted, "", "", 0)
	})
	if err == nil {
		c := s.cp.Counts
		s.ix.cfg.Progress.ScanChanges.Add(c.FilesAdded + c.FilesChanged + c.FilesMissing)
	}
	return err
}
