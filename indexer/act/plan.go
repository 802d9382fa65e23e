package act

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/dupefs/dupefs/indexer/mountinfo"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// Keep rules: which file of a group stays.
const (
	KeepOldest       = "oldest"        // the oldest mtime (ties: the lowest file id)
	KeepNewest       = "newest"        // the newest mtime
	KeepFirstRoot    = "first-root"    // one under the root added first
	KeepShortestPath = "shortest-path" // the shortest path
)

// KeepRules lists the keep rules, the default first.
var KeepRules = []string{KeepOldest, KeepNewest, KeepFirstRoot, KeepShortestPath}

// Selection says what a plan acts on and how it chooses.
type Selection struct {
	Op      string   // store.OpDedupe, OpLink, OpSymlink, OpTrash, OpUnlink
	Keep    string   // a keep rule ("": oldest)
	Prefer  []string // folders whose copies are kept first, in this order
	MinSize int64    // groups of smaller files are left alone
	Groups  []string // keys of groups of files or of folders to act on (nil: every group of files)
	// Report, when set, names the groups to act on and the paths in
	// them (an fclones report, maybe edited): only the listed paths are
	// touched, and the file kept is one of them. A path HOST:/path (a
	// report of another host's) is this host's path when HOST is Host.
	Report [][]string
	Host   string
	// Trashes are Trash folders besides those naming.InTrash knows (home
	// Trashes under another $XDG_DATA_HOME): nothing in them is kept or
	// acted on.
	Trashes []string
}

// inTrash reports whether path lies in a Trash folder.
func inTrash(path string, trashes []string) bool {
	if naming.InTrash(path) {
		return true
	}
	for _, t := range trashes {
		if naming.Below(t, path) {
			return true
		}
	}
	return false
}

// Options is what a plan records of its selection.
type Options struct {
	Keep    string   `json:"keep"`
	Prefer  []string `json:"prefer,omitempty"`
	MinSize int64    `json:"min_size,omitempty"`
	Groups  []string `json:"groups,omitempty"`
	Report  bool     `json:"from_report,omitempty"`
}

// Note says why a file of a selected group has no action.
type Note struct {
	Path   string
	Reason string
}

// Plan decides the actions of sel: per group the file to keep, and an
// action for every other file of another inode. roots are this host's, in
// the order first-root follows; files of no root among them are never
// planned.
func Plan(ctx context.Context, db Groups, sel Selection, roots []store.Root) ([]store.ActionSpec, []Note, error) {
	if sel.Keep == "" {
		sel.Keep = KeepOldest
	}
	order := map[int64]int{}
	for i, r := range roots {
		order[r.ID] = i
	}
	p := &planner{sel: sel, rootOrder: order}
	if sel.Report != nil {
		return p.specs, p.notes, p.fromReport(ctx, db)
	}
	keys, err := p.planFolders(ctx, db, sel.Groups)
	if err != nil {
		return nil, nil, err
	}
	if len(sel.Groups) > 0 && len(keys) == 0 {
		return p.specs, p.notes, nil // folder groups only
	}
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	err = db.Report(ctx, store.GroupQuery{MinSize: max(sel.MinSize, 1)}, nil, func(g store.Group, files []store.GroupFile) error {
		if len(want) > 0 && !want[g.Key()] {
			return nil
		}
		p.group(g.Algo, g.Hash, g.Size, files)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return p.specs, p.notes, nil
}

type planner struct {
	sel       Selection
	rootOrder map[int64]int
	netfs     mountinfo.Cache
	specs     []store.ActionSpec
	notes     []Note
}

// fromReport plans the groups of a report: each listed path must be
// indexed, live, hashed and of this host; the paths of one content form a
// group of the plan when they hold two or more inodes.
func (p *planner) fromReport(ctx context.Context, db Groups) error {
	for _, paths := range p.sel.Report {
		byContent := map[string][]store.GroupFile{}
		var keys []string
		sizes := map[string]int64{}
		seen := map[string]bool{}
		for _, path := range paths {
			if host, rest, ok := naming.SplitHostPath(path); ok {
				if host != p.sel.Host {
					p.notes = append(p.notes, Note{path, "a copy on host " + host + ": a host acts on its own files only"})
					continue
				}
				path = rest
			}
			if seen[path] {
				continue // listed twice: one file
			}
			seen[path] = true
			f, err := db.FileByPath(ctx, path) // of this host's
			switch {
			case errors.Is(err, store.ErrNotFound):
				p.notes = append(p.notes, Note{path, "not in the index"})
				continue
			case err != nil:
				return err
			case f.Missing:
				p.notes = append(p.notes, Note{path, "gone since it was indexed"})
				continue
			case f.Hash == nil:
				p.notes = append(p.notes, Note{path, "its whole content is not hashed (run dupefs index)"})
				continue
			case f.Size < max(p.sel.MinSize, 1):
				continue
			}
			k := naming.GroupKey(f.Algo, f.Hash)
			if _, ok := byContent[k]; !ok {
				keys = append(keys, k)
			}
			byContent[k] = append(byContent[k], f.GroupFile)
			sizes[k] = f.Size
		}
		for _, k := range keys {
			algo, sum, err := naming.ParseKey(k)
			if err != nil {
				return err
			}
			files := byContent[k]
			sort.Slice(files, func(i, j int) bool { return files[i].ID < files[j].ID })
			p.group(algo, sum, sizes[k], files)
		}
	}
	return nil
}

// group plans one group: the file kept, an action per file of another
// inode. Files in a Trash folder or on a network file system are neither
// kept nor acted on, and neither are the files of other hosts (of roots
// not among Plan's): a host keeps and acts among its own files only, so a
// group with one copy here has nothing to act on, whatever copies other
// hosts hold.
func (p *planner) group(algo string, sum []byte, size int64, files []store.GroupFile) {
	live := files[:0:0]
	for _, f := range files {
		if _, mine := p.rootOrder[f.RootID]; !mine {
			continue
		}
		if inTrash(f.Path, p.sel.Trashes) {
			p.notes = append(p.notes, Note{f.Path, "in a Trash folder: dupefs neither keeps nor acts on it"})
			continue
		}
		// A file the planner cannot classify (gone, unreadable) is
		// planned: the run classifies it again before it acts.
		if fs, err := p.netfs.Dev(f.Dev, f.Path); err == nil && fs.Network {
			p.notes = append(p.notes, Note{f.Path, onNetwork(fs)})
			continue
		}
		live = append(live, f)
	}
	if len(live) < 2 {
		return
	}
	unit := naming.GroupKey(algo, sum)
	keep := p.keeper(live)
	done := map[[2]uint64]bool{}
	for _, f := range live {
		if f.ID == keep.ID {
			continue
		}
		ino := [2]uint64{f.Dev, f.Ino}
		switch {
		case f.Dev == keep.Dev && f.Ino == keep.Ino:
			p.notes = append(p.notes, Note{f.Path, "a hard link of the kept file " + naming.EscapePath(keep.Path)})
			continue
		case p.sel.Op == store.OpDedupe && done[ino]:
			p.notes = append(p.notes, Note{f.Path, "a hard link of a copy deduplicated already"})
			continue
		}
		done[ino] = true
		p.specs = append(p.specs, store.ActionSpec{Unit: unit, Op: p.sel.Op, Algo: algo, Hash: sum, Size: size,
			Copy: ref(f), Keep: ref(keep)})
	}
}

func ref(f store.GroupFile) store.FileRef {
	return store.FileRef{FileID: f.ID, Path: f.Path, Dev: f.Dev, Ino: f.Ino, MtimeNS: f.MtimeNS}
}

// keeper chooses the file a group keeps (choose).
func (p *planner) keeper(files []store.GroupFile) store.GroupFile {
	ranks := make([]rank, len(files))
	for i, f := range files {
		ranks[i] = rankOf(f)
	}
	return files[p.choose(ranks)]
}

// choose returns which of the candidates is kept: among those under the
// first preferred folder that holds any (or all), the first by the keep
// rule.
func (p *planner) choose(ranks []rank) int {
	var cands []int
	for _, pref := range p.sel.Prefer {
		for i, r := range ranks {
			if naming.Within(pref, r.path) {
				cands = append(cands, i)
			}
		}
		if len(cands) > 0 {
			break
		}
	}
	if len(cands) == 0 {
		for i := range ranks {
			cands = append(cands, i)
		}
	}
	best := cands[0]
	for _, i := range cands[1:] {
		if p.ranks(ranks[i], ranks[best]) {
			best = i
		}
	}
	return best
}

// rank is what the keep rule compares of a file, or of a folder (its
// oldest and newest files' mtimes; no id).
type rank struct {
	oldest, newest int64
	root           int64
	path           string
	id             int64
}

func rankOf(f store.GroupFile) rank {
	return rank{oldest: f.MtimeNS, newest: f.MtimeNS, root: f.RootID, path: f.Path, id: f.ID}
}

// ranks reports whether a comes before b by the keep rule; ties go to the
// lowest id, then the path.
func (p *planner) ranks(a, b rank) bool {
	switch p.sel.Keep {
	case KeepNewest:
		if a.newest != b.newest {
			return a.newest > b.newest
		}
	case KeepFirstRoot:
		if ra, rb := p.rootOrder[a.root], p.rootOrder[b.root]; ra != rb {
			return ra < rb
		}
	case KeepShortestPath:
		if len(a.path) != len(b.path) {
			return len(a.path) < len(b.path)
		}
		if a.path != b.path {
			return a.path < b.path
		}
	default: // oldest
		if a.oldest != b.oldest {
			return a.oldest < b.oldest
		}
	}
	if a.id != b.id {
		return a.id < b.id
	}
	return a.path < b.path
}

// ValidKeep checks a keep rule.
func ValidKeep(rule string) error {
	for _, k := range KeepRules {
		if rule == k {
			return nil
		}
	}
	return fmt.Errorf("keep rule %q: want one of %s", rule, strings.Join(KeepRules, ", "))
}
