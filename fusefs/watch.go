package fusefs

import (
	"context"
	"strconv"
	"time"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// watch asks the watcher whether anyone committed — the indexer of this
// process or `dupefs index` in another; on SQLite it polls PRAGMA
// data_version, on PostgreSQL it hears the writers' notifications — and
// tells the kernel what changed: the groups of the change feed
// (contents.change_seq) and the thumbnails of theirs (thumbnails.change_seq)
// lose their cached entries, attributes and listings. It runs in its own
// goroutine: notifying from a FUSE handler deadlocks.
func (f *FS) watch(ctx context.Context, w commits, s feeds) {
	defer w.Close()
	t := time.NewTicker(f.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		missed := w.Missed()
		changed, err := w.Changed(ctx)
		if err != nil {
			if ctx.Err() == nil {
				f.logf("dupefs: watch the index: %v", err)
			}
			continue
		}
		if missed {
			s = f.dropAll(ctx)
			changed = true
		}
		if !changed {
			continue
		}
		f.ends.changed()
		f.statusChanged()
		seq := f.applyChanges(ctx, s.groups)
		moved := f.rootsChanged(ctx)
		if moved {
			// Names made since the poll began may have been made of the
			// roots before the change it read: they are made again.
			f.ends.changed()
		}
		if seq != s.groups || moved {
			s.groups = seq
			f.filesChanged()
		}
		if moved {
			f.pathNamesChanged(ctx)
		}
		f.appliedSeq.Store(s.groups)
		s.thumbs = f.applyThumbChanges(ctx, s.thumbs)
		s.folders = f.applyFolderChanges(ctx, s.folders)
		s.pairs = f.applyPairChanges(ctx, s.pairs)
	}
}

// dropAll forgets everything read of the index, for when commits may have
// gone untold (the listener of a PostgreSQL index lost its connection):
// every cache of the view ends with the generation, the snapshots and the
// roots' names are made again, and the feeds start over, so that the
// kernel is told of every group, thumbnail, folder group and pair there
// is, and forgets what it holds of them.
func (f *FS) dropAll(ctx context.Context) feeds {
	f.access.forgetGroups()
	f.ends.changed()
	f.statusChanged()
	f.filesChanged()
	f.pathNamesChanged(ctx)
	for _, n := range []uint64{inoRoot, inoByHash, inoBySize, inoThumbs, inoStatus, inoByFolder, inoFiles, inoSummary, inoFolders, inoOverlap} {
		f.notifyInode(n)
	}
	return feeds{}
}

// commits is what watch asks of a store.Watcher.
type commits interface {
	Changed(ctx context.Context) (bool, error)
	Missed() bool
	Close() error
}

// feeds are the last change the kernel was told of, per change feed.
type feeds struct{ groups, thumbs, folders, pairs int64 }

// startWatch takes the watcher's baseline (data_version and the last
// changes) before the mount serves anything, so no commit after it goes
// unseen.
func (f *FS) startWatch() (w *store.Watcher, s feeds, err error) {
	ctx := dbctx()
	w, err = f.db.NewWatcher(ctx)
	if err != nil {
		return nil, s, err
	}
	if s.groups, _, err = f.db.LastChange(ctx); err == nil {
		if s.thumbs, _, err = f.db.LastThumbChange(ctx); err == nil {
			if s.folders, _, err = f.db.LastFolderChange(ctx); err == nil {
				s.pairs, _, err = f.db.LastPairChange(ctx)
			}
		}
	}
	if err != nil {
		w.Close()
		return nil, s, err
	}
	f.rootsChanged(ctx) // the roots /files names copies after, to watch
	return w, s, nil
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
			f.logf("dupefs: read changes: %v", err)
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
		// The top folders' listings and mtimes moved; /thumbs lists
		// groups only.
		for _, n := range []uint64{inoByHash, inoBySize, inoRoot, inoThumbs} {
			f.notifyInode(n)
		}
	}
	return seq
}

// notifyInode tells the kernel that node changed (its attributes, its
// listing, its pages), by the node id it knows it by.
func (f *FS) notifyInode(node uint64) { f.srv.InodeNotify(f.ids.shown(node), 0, 0) }

// notifyEntry tells the kernel that name in folder parent changed.
func (f *FS) notifyEntry(parent uint64, name string) { f.srv.EntryNotify(f.ids.shown(parent), name) }

// invalidate drops what the kernel may hold of one changed group: its
// entry in /by-hash and in /by-size/<bytes> (a new group may sit in a
// negative entry, a gone one in a positive one), the attributes and the
// listings of its folders, and the entry of its thumbnail. (Entries of
// copies are kept a second only.) The kernel answers ENOENT for what it
// did not hold; that is ignored.
func (f *FS) invalidate(c store.Change) {
	f.access.forgetGroup(c.ID)
	k := key(c.GroupRef)
	f.notifyEntry(inoByHash, k)
	f.notifyInode(ino(kindGroup, c.ID))
	f.notifyInode(ino(kindFilesGroup, c.ID))
	size := ino(kindSizeDir, c.Size)
	f.notifyEntry(inoBySize, strconv.FormatInt(c.Size, 10))
	f.notifyEntry(size, k)
	f.notifyInode(size)
	f.invalidateThumb(k, 0)
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
			f.logf("dupefs: read thumbnail changes: %v", err)
			return seq
		}
		for _, c := range cs {
			f.invalidateThumb(c.Key, c.ID)
			seq, any = c.Seq, true
		}
		if len(cs) < 1000 {
			break
		}
	}
	if any {
		f.notifyInode(inoThumbs)
	}
	return seq
}

// invalidateThumb drops the kernel's entry of a group's thumbnail (a new
// one may sit in a negative entry) and, given the thumbnail's id, the
// pages it kept of it.
func (f *FS) invalidateThumb(k string, id int64) {
	if name, err := naming.ThumbFileName(k); err == nil {
		f.notifyEntry(inoThumbs, name)
	}
	if id != 0 {
		f.notifyInode(ino(kindThumb, id))
	}
}
