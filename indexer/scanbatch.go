package indexer

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dupefs/dupefs/store"
)

// write runs one write in the open batch, opening one first if needed.
func (s *scanRun) write(fn func(*store.ScanBatch) error) error {
	if err := s.begin(); err != nil {
		return err
	}
	s.ops++
	return fn(s.batch)
}

// begin opens the batch transaction if none is open, fenced by the lease.
func (s *scanRun) begin() error {
	if s.tx != nil {
		return nil
	}
	s.pf.hold()
	tx, err := s.ix.db.Begin(s.w.ctx)
	if err != nil {
		s.pf.release()
		return err
	}
	if err := tx.Fence(s.lease); err != nil {
		tx.Rollback()
		s.pf.release()
		return err
	}
	b, err := tx.ScanBatch(time.Now().UnixMilli(), s.ix.db.HashAlgo())
	if err == nil {
		err = s.queueFolders(tx, b)
	}
	if err != nil {
		tx.Rollback()
		s.pf.release()
		return err
	}
	s.tx, s.batch, s.txStart, s.ops = tx, b, time.Now(), 0
	return nil
}

// queueFolders lets the batch queue its new folders (store QueueFolders)
// when the run walks a whole tree the index held no folder of when its
// first batch began: every folder it adds is then new.
func (s *scanRun) queueFolders(tx *store.Tx, b *store.ScanBatch) error {
	if len(s.cp.Targets) > 0 || !b.QueuesFolders() {
		return nil
	}
	if !s.treeChecked {
		has, err := tx.SubtreeHasFolders(s.root.Path)
		if err != nil {
			return err
		}
		s.treeChecked, s.queueNew = true, !has
	}
	if !s.queueNew {
		return nil
	}
	return b.QueueFolders()
}

// maybeCommit commits when the batch is old or big enough, and writes a
// checkpoint every few seconds even when nothing changed.
func (s *scanRun) maybeCommit() error {
	if s.tx != nil && (time.Since(s.txStart) >= s.ix.cfg.BatchDuration || s.ops >= maxBatchOps) {
		return s.commit()
	}
	if s.tx == nil && time.Since(s.lastCP) >= 2*time.Second {
		if err := s.begin(); err != nil {
			return err
		}
		return s.commit()
	}
	return nil
}

// commit records the checkpoint and commits the open batch, if any.
func (s *scanRun) commit() error {
	if s.tx == nil {
		return nil
	}
	if len(s.cp.Targets) == 0 {
		s.cp.HasLast, s.cp.Last = true, []byte(s.lastDone)
	}
	// The batch's rows first: a write it sends may still be under way,
	// and the session takes one statement at a time.
	err := s.batch.Close()
	var cp []byte
	if err == nil {
		cp, err = json.Marshal(s.cp)
	}
	if err == nil {
		err = s.tx.SetCheckpoint(s.lease, string(cp), s.cp.Counts.FilesSeen)
	}
	if err == nil && s.cp.ScanID != 0 {
		err = s.tx.UpdateScan(s.cp.ScanID, "running", s.cp.Counts)
	}
	if err != nil {
		s.tx.Rollback()
	} else {
		err = s.tx.Commit()
	}
	s.pf.release()
	s.tx, s.batch, s.lastCP = nil, nil, time.Now()
	return err
}

// complete records the scan's totals and ends the job.
func (s *scanRun) complete(ctx context.Context) error {
	c := s.cp.Counts
	err := s.ix.db.Write(ctx, func(tx *store.Tx) error {
		if err := tx.Fence(s.lease); err != nil {
			return err
		}
		if err := tx.UpdateScan(s.cp.ScanID, "succeeded", c); err != nil {
			return err
		}
		if err := tx.FinishRootScan(s.root.ID, store.RootStats{Files: c.FilesSeen, Folders: c.FoldersSeen, Bytes: c.BytesSeen}); err != nil {
			return err
		}
		if err := tx.SetCheckpoint(s.lease, "", c.FilesSeen); err != nil {
			return err
		}
		// The last scan of a bulk load builds the indexes and groups.
		if n, err := tx.ActiveScans(); err != nil {
			return err
		} else if n == 1 {
			s.ix.cfg.Progress.SetPhase("scan", "building indexes")
			// With the sums the early reads have made by then.
			known := func() []store.KnownHash { return s.ix.early.take(s.w.algo) }
			if err := tx.EndBulkLoadWith(known); err != nil {
				return err
			}
		}
		return tx.Finish(s.lease, store.StatusCompleted, "", "", 0)
	})
	if err == nil {
		s.ix.cfg.Progress.ScanChanges.Add(c.FilesAdded + c.FilesChanged + c.FilesMissing)
	}
	return err
}
