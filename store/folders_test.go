package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/store/naming"
)

// The folder groups found class by class after a change must be those a
// search from scratch finds: two indexes get the same random trees and
// changes, one updating its groups class by class, one finding them again
// each time, and both are checked against a search from scratch.
func TestFolderGroupsByClassEqualFromScratch(t *testing.T) {
	defer func(n, b, c int) { maxGroupMoves, sumBatch, classBatch = n, b, c }(maxGroupMoves, sumBatch, classBatch)
	// Batches of sums (PostgreSQL's) that end within each fold, and of
	// classes read that end within each update.
	sumBatch, classBatch = 3, 3
	ctx := context.Background()
	for seed := int64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var steps [][]fakeFile
		var lose [][]string
		for s := 0; s < 4; s++ {
			var fs []fakeFile
			for i := 0; i < 30; i++ {
				c := 1 + rng.Intn(8)
				dir := fmt.Sprintf("/r/d%d/s%d", rng.Intn(6), rng.Intn(3))
				if rng.Intn(3) == 0 {
					dir = path.Dir(dir)
				}
				fs = append(fs, fakeFile{dir, fmt.Sprintf("f%d-%d", s, i), c})
			}
			steps = append(steps, fs)
			lose = append(lose, []string{fmt.Sprintf("/r/d%d", rng.Intn(6)), fmt.Sprintf("/r/d%d/s%d", rng.Intn(6), rng.Intn(3))})
		}
		got := map[int][]string{}
		for _, limit := range []int{0, 1 << 30} {
			maxGroupMoves = limit
			db := openTest(t)
			r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
			if err != nil {
				t.Fatal(err)
			}
			for s := range steps {
				addFakeFiles(t, db, r.ID, steps[s])
				if s > 0 {
					err := db.Write(ctx, func(tx *Tx) error {
						b, err := tx.ScanBatch(1, naming.HashSHA256)
						if err != nil {
							return err
						}
						defer b.Close()
						for _, p := range lose[s] {
							if err := b.LoseFolder(p); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
				}
				if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
					t.Fatal(err)
				}
				bad, err := db.Folders().VerifyFolderSigs(ctx)
				if err != nil || len(bad) > 0 {
					t.Fatalf("seed %d step %d limit %d: %v %q", seed, s, limit, err, bad)
				}
				gs, _ := db.Folders().FolderGroups(ctx, 1)
				for _, g := range gs {
					var ps []string
					for _, f := range g.Folders {
						ps = append(ps, f.Path)
					}
					got[limit] = append(got[limit], fmt.Sprint(s, ps))
				}
			}
		}
		if fmt.Sprint(got[0]) != fmt.Sprint(got[1<<30]) {
			t.Fatalf("seed %d: from scratch %q, class by class %q", seed, got[0], got[1<<30])
		}
	}
}

// fakeFile is a file of content (hashed whole), or with a content below
// zero a link of inode -content, never hashed whole (its term is the
// inode's).
type fakeFile struct {
	dir, name string
	content   int
}

// addFakeFiles writes files (hashed) through a scan batch, their folders
// with their parents under /r.
func addFakeFiles(tb testing.TB, db *DB, root int64, files []fakeFile) {
	tb.Helper()
	addFakeFilesUnder(tb, db, root, "/r", files)
}

// addFakeFilesUnder is addFakeFiles for the root at top.
func addFakeFilesUnder(tb testing.TB, db *DB, root int64, top string, files []fakeFile) {
	tb.Helper()
	ctx := context.Background()
	err := db.Write(ctx, func(tx *Tx) error {
		b, err := tx.ScanBatch(1, naming.HashSHA256)
		if err != nil {
			return err
		}
		defer b.Close()
		ids := map[string]int64{}
		var folder func(p string) (int64, error)
		folder = func(p string) (int64, error) {
			if id, ok := ids[p]; ok {
				return id, nil
			}
			var parent int64
			if p != top {
				var err error
				if parent, err = folder(path.Dir(p)); err != nil {
					return 0, err
				}
			}
			id, err := b.AddFolder(root, parent, p, "", nil)
			ids[p] = id
			return id, err
		}
		for _, f := range files {
			id, err := folder(f.dir)
			if err != nil {
				return err
			}
			sum := make([]byte, 32)
			binary.BigEndian.PutUint32(sum, uint32(f.content))
			st := FileStat{Name: f.name, Size: int64(100 + f.content), MtimeNS: 1, Dev: 1, Ino: nextIno(),
				Nlink: 1, Hash: &FileHash{Status: HashDone, Content: sum}}
			if f.content < 0 {
				st = FileStat{Name: f.name, Size: int64(100 - f.content), MtimeNS: 1, Dev: 1, Ino: 1<<40 + uint64(-f.content),
					Nlink: 2, Hash: &FileHash{Status: HashPartial}}
			}
			if err := b.AddFile(root, id, st); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// A change to a folder unhides the groups of its subfolders: a and b are
// one group, hiding {a/x, b/x} and {a/y, b/y}; once b holds one more file,
// those two are the groups.
func TestFolderChangeUnhidesSubfolderGroups(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	groups := func() string {
		gs, err := db.Folders().FolderGroups(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, g := range gs {
			var ps []string
			for _, f := range g.Folders {
				ps = append(ps, f.Path)
			}
			out = append(out, fmt.Sprint(ps))
		}
		sort.Strings(out)
		return fmt.Sprint(out)
	}
	addFakeFiles(t, db, r.ID, []fakeFile{{"/r/a/x", "1", 1}, {"/r/a/y", "2", 2}, {"/r/b/x", "1", 1}, {"/r/b/y", "2", 2}})
	if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	if g := groups(); g != "[[/r/a /r/b]]" {
		t.Fatalf("groups: %s", g)
	}
	addFakeFiles(t, db, r.ID, []fakeFile{{"/r/b/z", "3", 3}})
	if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	if g := groups(); g != "[[/r/a/x /r/b/x] [/r/a/y /r/b/y]]" {
		t.Fatalf("groups after b changed: %s", g)
	}
}

var lastIno uint64

func nextIno() uint64 { lastIno++; return lastIno }

// ConfirmFolders splits a group whose folders do not hold the same files,
// whatever signature they were given (here one made up, as a collision
// would): by content alone, then by content and relative paths.
func TestConfirmFoldersSplitsByWhatFoldersHold(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	addFakeFiles(t, db, r.ID, []fakeFile{
		{"/r/a", "x", 1}, {"/r/a/sub", "y", 2}, // 1 and 2, one of them below
		{"/r/b", "x", 1}, {"/r/b", "y", 2}, // the same, side by side
		{"/r/c", "x", 1}, {"/r/c/sub", "z", 2}, // a's layout, another name
		{"/r/d", "x", 1}, {"/r/d/sub", "y", 3}, // another content
		{"/r/e", "x", 1}, {"/r/e/sub", "y", 2}, // a's twin
	})
	g := FolderGroup{Sig: []byte("forged")}
	for _, p := range []string{"/r/a", "/r/b", "/r/c", "/r/d", "/r/e"} {
		f, err := db.Files().FolderByPath(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		g.Folders = append(g.Folders, FolderRef{ID: f.ID, Parent: f.ParentID, Path: p, Host: db.Host().ID})
	}
	paths := func(classes [][]FolderRef) []string {
		var out []string
		for _, c := range classes {
			var ps []string
			for _, f := range c {
				ps = append(ps, f.Path[len("/r/"):])
			}
			out = append(out, strings.Join(ps, ""))
		}
		return out
	}
	for _, tc := range []struct {
		layout bool
		want   []string
	}{{false, []string{"abce", "d"}}, {true, []string{"ae", "b", "c", "d"}}} {
		classes, err := db.Folders().ConfirmFolders(ctx, g, tc.layout)
		if err != nil {
			t.Fatal(err)
		}
		if got := paths(classes); !slices.Equal(got, tc.want) {
			t.Errorf("layout %v: classes %q, want %q", tc.layout, got, tc.want)
		}
	}
}
