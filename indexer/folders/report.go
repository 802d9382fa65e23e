package folders

import (
	"context"
	"fmt"
	"sort"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// Options choose what the report holds.
type Options struct {
	// MinSimilarity is the least similarity of a reported pair, a
	// fraction in (0, 1]; 0 means 0.5.
	MinSimilarity float64
	ExactOnly     bool  // no partial pairs
	Layout        bool  // exact groups must match in relative paths too
	MinSize       int64 // folders of fewer bytes are left out
	// search: search every folder for the pairs even when the index
	// keeps them (tests compare the two).
	search bool
}

// ListLimit is how many files only one folder of a pair holds are listed.
const ListLimit = 20

// Exact is a confirmed group of folders with equal content.
type Exact struct {
	Key     string // <algo>:<hex of the signature>
	Files   int64  // of one folder
	Bytes   int64
	Folders []string
}

// Partial is a pair of folders that overlap in part.
type Partial struct {
	A, B                       string
	Similarity                 float64 // |A ∩ B| / |A ∪ B|
	SharedFiles, SharedBytes   int64
	OnlyInA, OnlyInB           []string // relative paths, the first ListLimit
	OnlyInACount, OnlyInBCount int64
}

// Report is what `dupefs folders` prints.
type Report struct {
	Exact   []Exact
	Partial []Partial
	// Seeds and Candidates are the pairs of folders the overlap search
	// looked at: proposed by a shared content, then with their ancestors.
	Seeds, Candidates int
}

// Build reads the report from the index. The folder signatures must be up
// to date (store.UpdateFolderSigs); the caller says when the index is not.
// The partial pairs at the default similarity, of every size, are those
// the index keeps (store.Folders.KeptPairs) when it keeps them; others are
// searched for (store.Folders.FindPartialPairs).
func Build(ctx context.Context, db Index, opts Options) (*Report, error) {
	if opts.MinSimilarity == 0 {
		opts.MinSimilarity = store.DefaultMinSimilarity
	}
	if opts.MinSimilarity < 0 || opts.MinSimilarity > 1 {
		return nil, fmt.Errorf("similarity %v is not a fraction", opts.MinSimilarity)
	}
	opts.MinSize = max(opts.MinSize, 1)
	rep := &Report{}
	var err error
	if rep.Exact, err = exactGroups(ctx, db, opts); err != nil {
		return nil, err
	}
	if opts.ExactOnly {
		return rep, nil
	}
	pairs, kept := []store.PartialPair(nil), false
	if opts.MinSimilarity == store.DefaultMinSimilarity && opts.MinSize <= 1 && !opts.search {
		if pairs, kept, err = db.KeptPairs(ctx); err != nil {
			return nil, err
		}
	}
	if !kept {
		if pairs, rep.Seeds, rep.Candidates, err = db.FindPartialPairs(ctx, opts.MinSimilarity, opts.MinSize); err != nil {
			return nil, err
		}
	}
	type folder struct {
		host int64
		dir  string
	}
	cache := map[folder][]store.SubtreeFile{}
	contents := func(host int64, dir string) ([]store.SubtreeFile, error) {
		if fs, ok := cache[folder{host, dir}]; ok {
			return fs, nil
		}
		fs, _, err := db.SubtreeContentsOn(ctx, host, dir)
		if err == nil {
			cache[folder{host, dir}] = fs
		}
		return fs, err
	}
	for _, p := range pairs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r, err := keptPair(ctx, db, p)
		if !kept {
			r, err = comparePair(func(dir string) ([]store.SubtreeFile, error) { return contents(p.HostA, dir) },
				func(dir string) ([]store.SubtreeFile, error) { return contents(p.HostB, dir) }, p.A, p.B)
		}
		if err != nil {
			return nil, err
		}
		r.A, r.B = onHost(p.OnA, r.A), onHost(p.OnB, r.B)
		rep.Partial = append(rep.Partial, r)
	}
	sort.SliceStable(rep.Partial, func(i, j int) bool {
		a, b := rep.Partial[i], rep.Partial[j]
		if a.SharedBytes != b.SharedBytes {
			return a.SharedBytes > b.SharedBytes
		}
		if a.Similarity != b.Similarity {
			return a.Similarity > b.Similarity
		}
		if a.A != b.A {
			return a.A < b.A
		}
		return a.B < b.B
	})
	return rep, nil
}

// keptPair is a pair the index keeps as the report shows it.
func keptPair(ctx context.Context, db Index, p store.PartialPair) (Partial, error) {
	r := Partial{A: p.A, B: p.B, Similarity: p.Similarity(), SharedFiles: p.Shared, SharedBytes: p.SharedBytes,
		OnlyInACount: p.OnlyA, OnlyInBCount: p.OnlyB}
	var err error
	if r.OnlyInA, err = db.PairOnlyPaths(ctx, p.ID, 0, ListLimit); err == nil {
		r.OnlyInB, err = db.PairOnlyPaths(ctx, p.ID, 1, ListLimit)
	}
	return r, err
}

// exactGroups reads the exact groups: with the layout ignored, as the
// indexer kept them when it last folded changes in (confirmed file by file
// then, store.ConfirmFolders); with the layout, found now by splitting the
// groups of equal content by their relative paths, which confirms them.
func exactGroups(ctx context.Context, db Index, opts Options) ([]Exact, error) {
	var gs []store.FolderGroup
	var err error
	if opts.Layout {
		gs, err = db.ExactFolderGroups(ctx, true, opts.MinSize)
	} else {
		gs, err = db.FolderGroups(ctx, opts.MinSize)
	}
	var out []Exact
	for _, g := range gs {
		e := Exact{Key: g.Key(db.HashAlgo()), Files: g.Files, Bytes: g.Bytes}
		for _, f := range g.Folders {
			e.Folders = append(e.Folders, onHost(f.On, f.Path))
		}
		out = append(out, e)
	}
	return out, err
}

// comparePair lists what two folders share and what only one holds, file
// by file: of the files of one content, as many as the other folder holds
// count as shared, first by relative path.
func comparePair(contentsA, contentsB func(string) ([]store.SubtreeFile, error), a, b string) (Partial, error) {
	p := Partial{A: a, B: b}
	fa, err := contentsA(a)
	if err != nil {
		return p, err
	}
	fb, err := contentsB(b)
	if err != nil {
		return p, err
	}
	inB := map[store.Sig]int{}
	for _, f := range fb {
		inB[f.Term]++
	}
	inA := map[store.Sig]int{}
	for _, f := range fa {
		if inB[f.Term] > 0 {
			inB[f.Term]--
			inA[f.Term]++
			p.SharedFiles++
			p.SharedBytes += f.Size
			continue
		}
		p.OnlyInACount++
		if len(p.OnlyInA) < ListLimit {
			p.OnlyInA = append(p.OnlyInA, f.Rel)
		}
	}
	for _, f := range fb {
		if inA[f.Term] > 0 {
			inA[f.Term]--
			continue
		}
		p.OnlyInBCount++
		if len(p.OnlyInB) < ListLimit {
			p.OnlyInB = append(p.OnlyInB, f.Rel)
		}
	}
	if union := int64(len(fa)) + int64(len(fb)) - p.SharedFiles; union > 0 {
		p.Similarity = float64(p.SharedFiles) / float64(union)
	}
	return p, nil
}

// onHost is how the report names the folder path of host: HOST:/path on
// another host (naming.HostPath), its path on this one (host "").
func onHost(host, path string) string {
	if host == "" {
		return path
	}
	return naming.HostPath(host, path)
}
