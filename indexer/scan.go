package indexer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/indexer/mountinfo"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// ErrRootUnavailable: a root is not there (unmounted disk, removed folder)
// or is not a folder. Its scan fails and its files are left as they were.
var ErrRootUnavailable = errors.New("root is not available")

// scanCheckpoint is what a scan job records with every batch, so a later
// attempt resumes after the last committed folder.
type scanCheckpoint struct {
	ScanID  int64            `json:"scan_id"`
	HasLast bool             `json:"has_last"`
	Last    []byte           `json:"last"` // rel path; bytes, names need not be UTF-8
	Counts  store.ScanCounts `json:"counts"`
	// Held: the index held folders of the root's tree when the scan
	// began (a root inside it taken over, whose first index stopped
	// midway), so no folder it does not know is taken for new with all
	// below it, though a bulk load is under way.
	Held bool `json:"held,omitempty"`
	// Targets, when set, make the scan a targeted one (the watcher's):
	// only these folders are read, with the folders new below them, and
	// the root's totals are left as they are. A killed targeted scan
	// reads them all again.
	Targets [][]byte `json:"targets,omitempty"`
}

// scanRun is one attempt at a scan job.
type scanRun struct {
	ix    *Indexer
	lease store.Lease
	root  store.Root
	cp    scanCheckpoint
	w     *walker
	pf    *prefetcher

	tx       *store.Tx
	batch    *store.ScanBatch
	txStart  time.Time
	ops      int
	lastDone string
	lastCP   time.Time
	// vanished counts the folders gone between their parent's listing
	// and their own: said once when the scan ends, not a line each.
	vanished int64
	// queueNew: the index held no folder of the root's tree when this
	// attempt's first batch began, so every folder it adds is new (looked
	// at once: treeChecked). Unlike the checkpoint's Held, it is this
	// attempt's own: a resumed one finds its earlier attempts' folders.
	treeChecked, queueNew bool
}

// preloadFolders bounds the folder rows a rescan reads in one query as
// its walk starts (readFolderRows), some 200 bytes each, so memory stays flat
// however many folders a root has: a root of more is read folder by
// folder. On /usr (20k folders) the preload takes a re-index from 0.39 to
// 0.33 s and adds 6 MB (7 alternating runs).
var preloadFolders int64 = 1 << 15 // a variable for tests

// longPathNote says a folder is left out for its path's length.
func longPathNote(path string, max int) string {
	return fmt.Sprintf("%s: path longer than a PostgreSQL index takes (%d bytes, a byte that is not UTF-8 counted as four): left out",
		naming.EscapePath(path), max)
}

// maxBatchOps bounds the rows one scan transaction writes.
const maxBatchOps = 20000

// rootUnavailable says why a scan cannot walk root ("" when it can), with
// the root's stat in st: it is not a folder, it is on a network file
// system the root does not take in, or its path is longer than the index
// takes (fits, max: the index's FolderPathFits and MaxFolderPath).
func rootUnavailable(root store.Root, st *unix.Stat_t, fits func(string) bool, max int) string {
	if err := unix.Stat(root.Path, st); err != nil {
		return fmt.Sprintf("%s: %v", root.Path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Sprintf("%s: not a folder", root.Path)
	}
	if !fits(root.Path) {
		return longPathNote(root.Path, max)
	}
	if fs, err := mountinfo.ClassifyPath(root.Path); err == nil && fs.Network && !root.Network {
		return networkNote(root.Path, fs.Type, root.Path)
	}
	return ""
}

func (ix *Indexer) runScan(ctx context.Context, job store.Job, lease store.Lease) error {
	root, err := ix.db.Root(ctx, job.RootID)
	if errors.Is(err, store.ErrNotFound) {
		return ix.finish(ctx, lease, store.StatusCancelled, "root_removed", "the root was removed", nil)
	}
	if err != nil {
		return err
	}
	ix.cfg.Progress.SetPhase("scan", root.Path)
	ix.cfg.Progress.ScanExpected.Store(root.FileCount)
	var st unix.Stat_t
	if msg := rootUnavailable(root, &st, ix.db.FolderPathFits, ix.db.MaxFolderPath()); msg != "" {
		_ = ix.finish(ctx, lease, store.StatusFailed, "root_unavailable", msg, nil)
		return fmt.Errorf("%w: %s", ErrRootUnavailable, msg)
	}
	s := &scanRun{ix: ix, lease: lease, root: root, lastCP: time.Now()}
	if job.Checkpoint != "" {
		if err := json.Unmarshal([]byte(job.Checkpoint), &s.cp); err != nil {
			ix.cfg.Warn(fmt.Sprintf("scan of %s: unreadable checkpoint, starting over: %v", root.Path, err))
			s.cp = scanCheckpoint{}
		}
	}
	targeted := len(s.cp.Targets) > 0
	var bulk bool
	if targeted {
		ix.cfg.Progress.SetPhase("scan", fmt.Sprintf("%d changed folders of %s", len(s.cp.Targets), root.Path))
	} else if s.cp.ScanID == 0 {
		err := ix.db.Write(ctx, func(tx *store.Tx) (err error) {
			if err := tx.Fence(lease); err != nil {
				return err
			}
			id, err := tx.StartScan(root.ID, job.ID)
			s.cp.ScanID = id
			if err != nil {
				return err
			}
			if bulk, err = tx.StartBulkLoad(); err != nil || !bulk {
				return err
			}
			s.cp.Held, err = tx.SubtreeHasFolders(root.Path)
			// Nothing of this attempt is written yet: the same answer.
			s.treeChecked, s.queueNew = err == nil, !s.cp.Held
			return err
		})
		if err != nil {
			return err
		}
	} else if bulk, err = ix.db.BulkLoading(ctx); err != nil {
		return err
	}
	// A hash the index holds for an inode this walk reads is reused,
	// unless the index holds nothing of this host yet: a bulk load, or a
	// host's first index. (A file another process of this host hashes
	// meanwhile is then read again: time, not a wrong hash.)
	reuse := !bulk
	if reuse {
		if reuse, err = ix.db.HostHasFolders(ctx); err != nil {
			return err
		}
	}
	s.w = &walker{ctx: ctx, dbctx: context.WithoutCancel(ctx), ix: ix, algo: ix.db.HashAlgo(), sizes: ix.sizes, db: ix.db, root: root, rootDev: st.Dev, excludes: root.Excludes,
		resume: s.cp.HasLast && !targeted, checkpoint: string(s.cp.Last), bulk: bulk, newTree: bulk && !s.cp.Held, reuse: reuse, warn: ix.cfg.Warn}
	// (A root no scan has ended yet has no rows to read: its folders
	// are looked up one by one, should a killed scan have left some.)
	if !bulk && !targeted && root.FolderCount > 0 && root.FolderCount <= preloadFolders {
		s.w.rows = readFolderRows(ctx, ix, root)
		defer s.w.rows.join()
	}
	s.w.skip, s.w.skipIno = ix.skipSets()
	s.w.skipNames = map[string]bool{}
	for p := range s.w.skip {
		s.w.skipNames[filepath.Base(p)] = true
	}
	if s.w.skipAll = s.w.leftOut(root.Path); s.w.skipAll && !targeted {
		ix.cfg.Warn(fmt.Sprintf("%s is in a Trash, or in a path never indexed: nothing in it is indexed", naming.EscapePath(root.Path)))
	}

	jobCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopKeepalive := ix.keepalive(jobCtx, lease, cancel, func() (float64, int64) {
		c := s.counts()
		if root.FileCount > 0 {
			return min(0.99, float64(c.FilesSeen)/float64(root.FileCount)), c.FilesSeen
		}
		return 0, c.FilesSeen
	})
	releaseProcs := func() {}
	if !ix.cfg.FixedProcs {
		releaseProcs = coldWatch.hold()
	}
	if targeted {
		err = s.walkTargets(jobCtx)
	} else {
		ix.cfg.Walking(true)
		err = s.walk(jobCtx)
		ix.cfg.Walking(false)
	}
	releaseProcs()
	stopKeepalive()
	if s.vanished > 0 && ix.cfg.SayEvery > 0 {
		ix.notes.add(0, 0, s.vanished)
	} else if s.vanished > 0 {
		ix.cfg.Warn(fmt.Sprintf("scan of %s: %s %s vanished while being read", naming.EscapePath(root.Path),
			thousands(s.vanished), plural(s.vanished, "folder", "folders")))
	}
	if err != nil {
		if s.tx != nil {
			s.batch.Close()
			s.tx.Rollback()
			s.pf.release()
			s.tx = nil
		}
		if cause := context.Cause(jobCtx); errors.Is(cause, store.ErrLeaseLost) {
			err = cause
		}
		return ix.abandon(ctx, lease, err)
	}
	ix.forgetSizes(ctx, job.ID)
	s.w.sizes, s.w.links = nil, linkCache{}
	ix.testHook("walked", root.Path)
	if targeted {
		err = s.completeTargets(ctx)
	} else {
		// Not after the watcher's scans of a few folders: a forced
		// collection each would cost a mount CPU under a stream of
		// changes. Nor after a rescan that changed nothing: no hash run,
		// no fold follows that needs the memory (the runtime's scavenger
		// gives it back in time). In the background, beside the scan's
		// last write: it took 0.11-0.23 s of a first index's tail on one
		// CPU.
		if c := s.cp.Counts; s.w.bulk || c.FilesAdded+c.FilesChanged+c.FilesMissing > 0 {
			go returnWalkHeap()
		}
		if s.w.bulk {
			ix.early.start(ctx, ix, s.w.algo)
		}
		err = s.complete(ctx)
	}
	if err != nil {
		// Interrupted (or failed) after the walk: the job is let go as
		// retryable, as in the walk, not left running until its lease
		// expires; a resumed attempt passes over the walked folders.
		return ix.abandon(ctx, lease, err)
	}
	return nil
}

func (s *scanRun) counts() store.ScanCounts { return s.cp.Counts }

// walk visits every folder in depth-first order and commits what changed.
func (s *scanRun) walk(ctx context.Context) error {
	mode := modeFull
	if s.w.resume {
		mode = modePass
	}
	return s.walkFrom(ctx, newNode("", s.root.Path, mode, false, nil), 0)
}

// walkFrom visits start (a folder whose parent's id is parentID) and the
// folders below it the walk descends into, in depth-first order.
func (s *scanRun) walkFrom(ctx context.Context, rootNode *node, parentID int64) error {
	// 16k files and rows read ahead are enough to keep the committer
	// busy; with eight walkers a re-index of 1M files filled a buffer of
	// 100k to 66 MB of peak memory (16k: 42 MB, as fast).
	s.pf = newPrefetcher(s.ix.walkers(), 16384, s.w.read)
	defer s.pf.close()
	s.pf.start(rootNode)
	if s.w.rows != nil {
		// The readers start without the root's folder rows; the
		// committer needs them from its first folder.
		if err := s.w.rows.wait(ctx); err != nil {
			return err
		}
	}

	type frame struct {
		n  *node
		id int64
		i  int
	}
	var stack []frame
	visit := func(n *node, parentID int64) error {
		var res *dirResult
		var err error
		switch {
		case s.pf.ready(n):
			res, err = s.pf.wait(ctx, n)
		case s.tx != nil && time.Since(s.txStart) < s.ix.cfg.BatchDuration:
			// The batch is young: keep it open (a commit per folder
			// rewrote the same pages a dozen times on a first index),
			// but give its CPU to the readers while waiting.
			s.pf.release()
			res, err = s.pf.wait(ctx, n)
			s.pf.hold()
		default:
			// Never hold the write lock long while waiting for the disk.
			if err := s.commit(); err != nil {
				return err
			}
			res, err = s.pf.wait(ctx, n)
		}
		if err != nil {
			return err
		}
		if res.deferred {
			s.w.indexLater(n, res)
		}
		id, err := s.visit(ctx, n, parentID, res)
		if err != nil {
			return err
		}
		s.pf.consumed(res)
		res.files, res.dbFiles, res.dbDirs = nil, nil, nil
		stack = append(stack, frame{n: n, id: id})
		return s.maybeCommit()
	}
	if err := visit(rootNode, parentID); err != nil {
		return err
	}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.i >= len(top.n.res.subdirs) {
			top.n.res = nil
			stack = stack[:len(stack)-1]
			continue
		}
		c := top.n.res.subdirs[top.i]
		top.i++
		if err := visit(c, top.id); err != nil {
			return err
		}
	}
	return s.commit()
}

// visit applies one folder's result to the index and returns its folder id.
func (s *scanRun) visit(ctx context.Context, n *node, parentID int64, res *dirResult) (int64, error) {
	if n.mode == modePass {
		if res.dbFolder != nil && res.err == nil {
			s.lastDone = n.rel
			return res.dbFolder.ID, nil
		}
		// Committed by the earlier attempt but gone from the index or
		// unreadable now: process it in full.
		n.mode = modeFull
		*res = *s.w.read(n)
	}
	c := &s.cp.Counts
	errText := ""
	if res.err != nil {
		errText = res.err.Error()
		c.Errors++
		if isNotExist(res.err) {
			s.vanished++
		} else {
			s.ix.cfg.Warn(errText)
		}
	}
	// The signature is written with the folder's file rows, in the same
	// transaction: commits fall between folders only.
	sig := res.sig
	if res.err != nil {
		sig = nil
	}
	var id int64
	var err error
	if f := res.dbFolder; f != nil {
		id = f.ID
		if f.Missing || f.RootID != s.root.ID || f.ParentID != parentID || f.Error != errText || !bytes.Equal(f.ListingSig, sig) {
			err = s.write(func(b *store.ScanBatch) error { return b.SeeFolder(id, s.root.ID, parentID, errText, sig) })
		}
	} else {
		err = s.write(func(b *store.ScanBatch) (err error) {
			id, err = b.AddFolder(s.root.ID, parentID, n.abs, errText, sig)
			return err
		})
	}
	if err != nil {
		return 0, err
	}
	s.lastDone = n.rel
	c.FoldersSeen++
	s.ix.cfg.Progress.FoldersSeen.Add(1)
	if res.err != nil {
		return id, nil // unreadable: what the index knew of it stays
	}
	c.Errors += int64(res.fileErrs)
	if res.ref != nil && len(res.dbFiles) == 0 && !res.same && len(res.files) > 0 {
		// Every file is added, in order: a late hash of one is
		// written by its row id.
		if err := s.write(func(b *store.ScanBatch) error { s.w.sizes.wrote(res.ref, b.NextFileID()); return nil }); err != nil {
			return 0, err
		}
	}
	if err := s.diffFiles(id, res); err != nil {
		return 0, err
	}
	for i := range res.late {
		l := &res.late[i]
		if err := s.write(func(b *store.ScanBatch) error { return b.LateHash(l.dir, s.w.sizes.rowID(l), l.f) }); err != nil {
			return 0, err
		}
	}
	return id, s.diffDirs(res)
}

// diffFiles merges the disk's files with the index's rows, both by name.
func (s *scanRun) diffFiles(folderID int64, res *dirResult) error {
	c := &s.cp.Counts
	p := s.ix.cfg.Progress
	disk, db := res.files, res.dbFiles
	i, j := 0, 0
	for !res.same && (i < len(disk) || j < len(db)) {
		var err error
		switch {
		case j == len(db) || i < len(disk) && disk[i].Name < db[j].Name:
			d := disk[i]
			err = s.write(func(b *store.ScanBatch) error { return b.AddFile(s.root.ID, folderID, d) })
			c.FilesAdded++
			i++
		case i == len(disk) || db[j].Name < disk[i].Name:
			if r := db[j]; !r.Missing {
				err = s.write(func(b *store.ScanBatch) error { return b.LoseFile(r.ID) })
				c.FilesMissing++
			}
			j++
		default:
			d, r := disk[i], db[j]
			switch {
			case d.Size != r.Size || d.MtimeNS != r.MtimeNS || d.Dev != r.Dev || d.Ino != r.Ino:
				err = s.write(func(b *store.ScanBatch) error { return b.ChangeFile(r.ID, s.root.ID, d) })
				c.FilesChanged++
			case r.Missing || d.Nlink != r.Nlink || r.RootID != s.root.ID:
				err = s.write(func(b *store.ScanBatch) error { return b.SeeFile(r.ID, s.root.ID, d, r.Missing) })
			}
			i++
			j++
		}
		if err != nil {
			return err
		}
	}
	c.BytesSeen += res.bytes
	c.FilesSeen += int64(res.seen)
	p.FilesSeen.Add(int64(res.seen))
	return nil
}

// diffDirs marks the index's subfolders that are no longer on disk (or no
// longer walked) missing, with everything below them.
func (s *scanRun) diffDirs(res *dirResult) error {
	if len(res.dbDirs) == 0 {
		return nil
	}
	present := make(map[string]bool, len(res.subdirs))
	for _, c := range res.subdirs {
		present[c.abs] = true
	}
	for _, p := range res.present {
		present[p] = true
	}
	for _, d := range res.dbDirs {
		if d.Missing || present[d.Path] {
			continue
		}
		path := d.Path
		if err := s.write(func(b *store.ScanBatch) error { return b.LoseFolder(path) }); err != nil {
			return err
		}
		s.cp.Counts.FilesMissing++ // at least; the exact count is not needed
	}
	return nil
}

// skipSets returns the paths and inodes a scan must never index: the index
// file with its -wal and -shm, and Config.SkipPaths.
func (ix *Indexer) skipSets() (map[string]bool, map[[2]uint64]bool) {
	paths := map[string]bool{}
	inos := map[[2]uint64]bool{}
	for _, p := range append([]string{ix.db.Path(), ix.db.Path() + "-wal", ix.db.Path() + "-shm",
		ix.db.Path() + "-journal"}, ix.cfg.SkipPaths...) {
		paths[p] = true
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err == nil {
			inos[[2]uint64{st.Dev, st.Ino}] = true
		}
	}
	return paths, inos
}
