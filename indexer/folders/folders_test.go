package folders

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// body is a file content of n bytes, distinct for each seed.
func body(seed, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed*13 + i/251*seed)
	}
	copy(b, fmt.Sprintf("%d:", seed))
	return string(b)
}

// write makes the tree: path -> content; "=>other" hard-links other.
func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	var links []string
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(c, "=>") {
			links = append(links, p)
			continue
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(links)
	for _, p := range links {
		if err := os.Link(filepath.Join(root, files[p][2:]), filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
}

// index indexes root into a new index.
func index(t *testing.T, root string) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{Path: filepath.Join(t.TempDir(), "index.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, _, err := db.Files().AddRoot(ctx, store.RootSpec{Path: root}, true); err != nil {
		t.Fatal(err)
	}
	reindex(t, db)
	return db
}

func reindex(t *testing.T, db *store.DB) {
	t.Helper()
	if err := indexer.New(indexer.IndexOf(db), indexer.Config{Workers: 2}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if bad, err := db.Folders().VerifyFolderSigs(context.Background()); err != nil || len(bad) > 0 {
		t.Fatalf("folder signatures out of step: %v\n%s", err, strings.Join(bad, "\n"))
	}
}

// lines turns a report into the oracle's lines.
func lines(rep *Report) (exact, partial []string) {
	for _, e := range rep.Exact {
		fs := slices.Clone(e.Folders)
		sort.Strings(fs)
		exact = append(exact, strings.Join(fs, " | "))
	}
	for _, p := range rep.Partial {
		a, b := p.A, p.B
		if b < a {
			a, b = b, a
		}
		partial = append(partial, fmt.Sprintf("%s | %s | %.4f", a, b, math.Round(p.Similarity*10000)/10000))
	}
	sort.Strings(exact)
	sort.Strings(partial)
	return exact, partial
}

func rel(root string, ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(l, root+"/", ""), root, ".")
	}
	return out
}

// agree checks Build against the oracle.
func agree(t *testing.T, db *store.DB, root string, min float64, layout bool) (exact, partial []string) {
	t.Helper()
	rep, err := Build(context.Background(), db.Folders(), Options{MinSimilarity: min, Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	exact, partial = lines(rep)
	o := readOracle(t, root)
	wantExact, wantPartial := o.exact(layout), o.partial(min)
	if !slices.Equal(exact, wantExact) {
		t.Errorf("exact groups (layout %v):\n got  %q\n want %q", layout, rel(root, exact), rel(root, wantExact))
	}
	if !layout && !slices.Equal(partial, wantPartial) {
		t.Errorf("partial pairs at %.2f:\n got  %q\n want %q", min, rel(root, partial), rel(root, wantPartial))
	}
	return rel(root, exact), rel(root, partial)
}

// TestFolderCases builds in one tree the cases a folder report must get
// right (a copy with every file renamed, one copied deeper, one with a
// subfolder moved, one partly edited, nested copies, empty files, a shared
// licence file, hard links, odd names) and checks the report against the
// oracle and against what each case must give.
func TestFolderCases(t *testing.T) {
	root := filepath.Join(t.TempDir(), "tree")
	files := map[string]string{}
	add := func(dir string, seeds ...int) {
		for _, s := range seeds {
			files[fmt.Sprintf("%s/f%d", dir, s)] = body(s, 3000+s)
		}
	}
	// A folder copied with every file renamed.
	add("photos", 1, 2, 3, 4)
	for _, s := range []int{1, 2, 3, 4} {
		files[fmt.Sprintf("renamed/IMG_%04d.jpg", s)] = body(s, 3000+s)
	}
	// One copied into a deeper folder (with a file of its own above).
	add("album", 10, 11, 12)
	add("deep/a/b/album", 10, 11, 12)
	files["deep/notes.txt"] = body(19, 100)
	// One with a subfolder moved inside it.
	add("proj/src", 20, 21)
	add("proj/doc", 22)
	add("proj-copy/lib/src", 20, 21)
	add("proj-copy/doc", 22)
	// One with a third of its files changed.
	add("set", 30, 31, 32, 33, 34, 35)
	add("set-edit", 30, 31, 32, 33, 36, 37)
	// Nested copies: only the top is reported.
	add("top1/a", 40, 41)
	add("top1/b", 42, 43, 44)
	add("top2/a", 40, 41)
	add("top2/b", 42, 43, 44)
	// Folders of empty files only.
	files["empty1/e1"], files["empty1/e2"], files["empty2/e1"], files["empty2/e2"] = "", "", "", ""
	// Copies that share nothing but a common file.
	files["pa/LICENSE"], files["pb/LICENSE"] = body(50, 2000), body(50, 2000)
	add("pa", 51)
	add("pb", 52)
	// Hard links: the same content.
	add("hl1", 60, 61)
	files["hl2/x"], files["hl2/y"] = "=>hl1/f60", "=>hl1/f61"
	// Odd names.
	add("plain", 70, 71)
	add("odd\nname \xff", 70, 71)
	write(t, root, files)
	db := index(t, root)

	exact, partial := agree(t, db, root, 0.5, false)
	for _, want := range []string{
		"photos | renamed", "album | deep/a", "proj | proj-copy", "top1 | top2", "hl1 | hl2", "odd\nname \xff | plain",
	} {
		if !slices.Contains(exact, want) {
			t.Errorf("exact groups lack %q: %q", want, exact)
		}
	}
	for _, bad := range []string{"top1/a | top2/a", "empty1 | empty2", "pa | pb"} {
		if slices.Contains(exact, bad) {
			t.Errorf("exact groups hold %q", bad)
		}
	}
	if !slices.Contains(partial, "set | set-edit | 0.5000") || !slices.Contains(partial, "album | deep | 0.7500") {
		t.Errorf("partial pairs: %q", partial)
	}
	for _, p := range partial {
		if strings.HasPrefix(p, "pa | pb") {
			t.Errorf("pa and pb share one file of three: %q", p)
		}
	}
	// At 30%, pa and pb (1 of 3) are a pair.
	_, partial = agree(t, db, root, 0.3, false)
	if !slices.Contains(partial, "pa | pb | 0.3333") {
		t.Errorf("partial pairs at 30%%: %q", partial)
	}
	// With the layout, the moved subfolder no longer matches.
	exact, _ = agree(t, db, root, 0.5, true)
	for _, bad := range []string{"proj | proj-copy", "photos | renamed", "hl1 | hl2", "album | deep/a"} {
		if slices.Contains(exact, bad) {
			t.Errorf("exact groups with the layout hold %q", bad)
		}
	}
	for _, want := range []string{"top1 | top2", "album | deep/a/b/album", "odd\nname \xff | plain"} {
		if !slices.Contains(exact, want) {
			t.Errorf("exact groups with the layout lack %q: %q", want, exact)
		}
	}

	// What only one folder of a pair holds.
	rep, err := Build(context.Background(), db.Folders(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Partial {
		if filepath.Base(p.A) == "set" && filepath.Base(p.B) == "set-edit" {
			if p.SharedFiles != 4 || p.OnlyInACount != 2 || p.OnlyInBCount != 2 ||
				!slices.Equal(p.OnlyInA, []string{"f34", "f35"}) || !slices.Equal(p.OnlyInB, []string{"f36", "f37"}) {
				t.Errorf("set vs set-edit: %+v", p)
			}
			if want := int64(4*3000 + 30 + 31 + 32 + 33); p.SharedBytes != want {
				t.Errorf("shared bytes %d, want %d", p.SharedBytes, want)
			}
		}
	}
}

// TestRandomTrees compares the report with the oracle on generated trees
// full of copies, partial copies, moves and shared files, then again after
// changes (incremental signatures).
func TestRandomTrees(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			root := filepath.Join(t.TempDir(), "tree")
			files := map[string]string{}
			var dirs []string
			for i := 0; i < 6; i++ {
				d := fmt.Sprintf("d%d", i)
				dirs = append(dirs, d)
				for j := 0; j < 1+rng.Intn(5); j++ {
					s := rng.Intn(14) // a small pool: much overlap
					files[fmt.Sprintf("%s/%c%d", d, 'a'+rng.Intn(3), j)] = body(s, 500+s)
				}
				if rng.Intn(2) == 0 {
					sub := fmt.Sprintf("%s/s%d", d, i)
					dirs = append(dirs, sub)
					for j := 0; j < 1+rng.Intn(3); j++ {
						s := rng.Intn(14)
						files[fmt.Sprintf("%s/%d", sub, j)] = body(s, 500+s)
					}
				}
			}
			// Copies of folders, some renamed inside, some nested deeper.
			for i := 0; i < 4; i++ {
				src := dirs[rng.Intn(len(dirs))]
				dst := fmt.Sprintf("copy%d", i)
				if rng.Intn(2) == 0 {
					dst += "/deeper"
				}
				for p, c := range files {
					if naming.Within(src, p) {
						relp := strings.TrimPrefix(p, src+"/")
						if rng.Intn(4) == 0 {
							relp = strings.ReplaceAll(relp, "/", "_")
						}
						if rng.Intn(5) == 0 {
							c = body(100+rng.Intn(50), 700) // changed
						}
						files[dst+"/"+relp] = c
					}
				}
			}
			write(t, root, files)
			db := index(t, root)
			for _, min := range []float64{0.5, 0.25, 1} {
				agree(t, db, root, min, false)
			}
			agree(t, db, root, 0.5, true)

			// Change a few files, delete a folder, move one: the
			// incremental sums must agree again.
			var ps []string
			for p := range files {
				ps = append(ps, p)
			}
			sort.Strings(ps)
			for i := 0; i < 3; i++ {
				p := filepath.Join(root, ps[rng.Intn(len(ps))])
				os.WriteFile(p, []byte(body(rng.Intn(14), 500+rng.Intn(14))), 0o644)
			}
			os.RemoveAll(filepath.Join(root, dirs[rng.Intn(len(dirs))]))
			if err := os.Rename(filepath.Join(root, "copy0"), filepath.Join(root, "d0-moved")); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			reindex(t, db)
			agree(t, db, root, 0.5, false)
			agree(t, db, root, 0.5, true)
		})
	}
}
