package act

import (
	"context"
	"errors"
	"fmt"

	"github.com/dupefs/dupefs/indexer/mountinfo"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// Folder groups: --group may name an exact folder group, as
// dupefs folders and /by-folder name it. One folder of the group is kept
// (under the first --prefer folder that holds one; else by the keep rule:
// oldest, the folder holding the oldest file; newest, the one holding the
// newest; first-root and shortest-path on the folders' paths); every file
// of the other folders is acted on, its counterpart of the same content in
// the kept folder kept.

// ErrNoGroup: a --group key names no group of the index.
var ErrNoGroup = errors.New("no such group in the index")

// planFolders plans the folder groups among keys and returns the keys left
// (content groups). A key that is neither is an error.
func (p *planner) planFolders(ctx context.Context, db Groups, keys []string) ([]string, error) {
	var rest []string
	for _, k := range keys {
		algo, sum, err := naming.ParseKey(k)
		if err != nil {
			return nil, err
		}
		if _, err := db.Group(ctx, algo, sum); err == nil {
			rest = append(rest, k)
			continue
		} else if err != store.ErrNotFound {
			return nil, err
		}
		if algo != db.HashAlgo() {
			return nil, fmt.Errorf("%s: %w", k, ErrNoGroup)
		}
		g, err := db.FolderGroupBySig(ctx, sum)
		if err == store.ErrNotFound {
			return nil, fmt.Errorf("%s: %w (of files or of folders)", k, ErrNoGroup)
		}
		if err != nil {
			return nil, err
		}
		if err := p.folderGroup(ctx, db, g, k); err != nil {
			return nil, err
		}
	}
	return rest, nil
}

// folderGroup plans one folder group, key, as one unit: the store records
// all its actions or none. A folder in a Trash, or of another host, is
// neither kept nor acted on.
func (p *planner) folderGroup(ctx context.Context, db Groups, g store.FolderGroupInfo, key string) error {
	ms, err := db.FolderMembersPage(ctx, g.ID, 0, 1<<20)
	if err != nil {
		return err
	}
	type folder struct {
		rank
		files []store.SubtreeFile
	}
	var fs []*folder
	for _, m := range ms {
		if m.Host != "" {
			// Not this host's disk: its files are named by no path
			// here, and another host's plan acts on them if any does.
			continue
		}
		if inTrash(m.Path+"/x", p.sel.Trashes) { // the folder, or one above it, is a Trash
			p.notes = append(p.notes, Note{m.Path, "in a Trash folder: dupefs neither keeps nor acts on it"})
			continue
		}
		files, known, err := db.SubtreeContents(ctx, m.Path)
		if err != nil {
			return err
		}
		if !known {
			return fmt.Errorf("folder %s: some files are not hashed yet (run dupefs index)", naming.EscapePath(m.Path))
		}
		if fs, on := p.onNetwork(files); on {
			p.notes = append(p.notes, Note{m.Path, "holds files " + onNetwork(fs)})
			continue
		}
		f := &folder{rank: rank{path: m.Path}, files: files}
		for i, sf := range files {
			if i == 0 || sf.MtimeNS < f.oldest {
				f.oldest = sf.MtimeNS
			}
			if i == 0 || sf.MtimeNS > f.newest {
				f.newest = sf.MtimeNS
			}
			f.root = sf.RootID
		}
		if _, mine := p.rootOrder[f.root]; !mine {
			continue // a folder of another host: neither kept nor acted on here
		}
		fs = append(fs, f)
	}
	if len(fs) < 2 {
		return nil
	}
	// The folder kept.
	ranks := make([]rank, len(fs))
	for i, f := range fs {
		ranks[i] = f.rank
	}
	keep := fs[p.choose(ranks)]
	// Each file of another folder is acted on against a file of the same
	// content in the kept folder.
	partners := map[store.Sig][]store.SubtreeFile{}
	for _, f := range keep.files {
		partners[f.Term] = append(partners[f.Term], f)
	}
	done := map[[2]uint64]bool{}
	for _, f := range fs {
		if f == keep {
			continue
		}
		for _, c := range f.files {
			ks := partners[c.Term]
			if len(ks) == 0 {
				return fmt.Errorf("folder %s: %s has no counterpart in %s: the folders differ now (run dupefs index)",
					naming.EscapePath(f.path), naming.EscapePath(c.Rel), naming.EscapePath(keep.path))
			}
			k := ks[0]
			for _, o := range ks {
				if o.Rel == c.Rel { // the same relative path, when there is one
					k = o
				}
			}
			ino := [2]uint64{c.Dev, c.Ino}
			switch {
			case c.Size < max(p.sel.MinSize, 1):
				continue
			case c.Dev == k.Dev && c.Ino == k.Ino:
				p.notes = append(p.notes, Note{c.Path, "a hard link of the kept file " + naming.EscapePath(k.Path)})
				continue
			case done[ino]:
				p.notes = append(p.notes, Note{c.Path, "a hard link of a copy acted on already"})
				continue
			}
			done[ino] = true
			p.specs = append(p.specs, store.ActionSpec{Unit: key, Op: p.sel.Op, Algo: c.Algo, Hash: c.Sum, Size: c.Size,
				Copy: ref(c.GroupFile), Keep: ref(k.GroupFile)})
		}
	}
	return nil
}

// onNetwork reports whether a file of files is on a network file system,
// and which.
func (p *planner) onNetwork(files []store.SubtreeFile) (mountinfo.FS, bool) {
	for _, f := range files {
		if fs, err := p.netfs.Dev(f.Dev, f.Path); err == nil && fs.Network {
			return fs, true
		}
	}
	return mountinfo.FS{}, false
}
