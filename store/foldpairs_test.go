package store

import (
	"context"
	"fmt"
	"math/rand"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/store/naming"
)

// keptLines are the kept pairs (state 1 or 2) as lines.
func keptLines(t *testing.T, db *DB) []string {
	t.Helper()
	ctx := context.Background()
	rows, err := db.query(ctx, `SELECT a.path, b.path, p.state, p.shared_files, p.union_files
		FROM folder_pairs p JOIN folders a ON a.id = p.a_id JOIN folders b ON b.id = p.b_id WHERE p.state > 0`)
	out, err := collect("test", rows, err, func(r rowScanner) (string, error) {
		var a, b string
		var state, shared, union int64
		err := r.Scan(&a, &b, &state, &shared, &union)
		return fmt.Sprintf("%s | %s | %d %d/%d", a, b, state, shared, union), err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// searchLines are the pairs a search of every folder keeps, as lines.
func searchLines(t *testing.T, db *DB) []string {
	t.Helper()
	rows, tr, _, err := db.Folders().searchAll(context.Background(), DefaultMinSimilarity, 1)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		state := 1
		if r.shown {
			state = 2
		}
		out = append(out, fmt.Sprintf("%s | %s | %d %d/%d", tr.nodes[tr.byID[r.a]].Path, tr.nodes[tr.byID[r.b]].Path,
			state, r.shared, r.union))
	}
	slices.Sort(out)
	return out
}

// The pairs kept around the folders that changed are those a search of
// every folder keeps, whichever way a moved folder's partners are found
// (by its contents, by the file counts of folders), step after step of
// files added and folders lost, in two roots.
func TestKeptPairsEqualASearch(t *testing.T) {
	defer func(c int64, m int) { scopeCostPerContent, maxPairMoves = c, m }(scopeCostPerContent, maxPairMoves)
	ctx := context.Background()
	for seed := int64(1); seed <= 8; seed++ {
		for _, way := range []struct {
			cost  int64
			moves int
		}{{0, 1 << 30}, {1 << 40, 1 << 30}, {20, 0}} {
			scopeCostPerContent, maxPairMoves = way.cost, way.moves
			rng := rand.New(rand.NewSource(seed))
			db := openTest(t)
			var roots []int64
			for _, p := range []string{"/r", "/s"} {
				r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: p}, false)
				if err != nil {
					t.Fatal(err)
				}
				roots = append(roots, r.ID)
			}
			for step := 0; step < 5; step++ {
				var fs [2][]fakeFile
				for i := 0; i < 25; i++ {
					k := rng.Intn(2)
					dir := fmt.Sprintf("/%c/d%d/s%d", "rs"[k], rng.Intn(5), rng.Intn(3))
					if rng.Intn(3) == 0 {
						dir = path.Dir(dir)
					}
					fs[k] = append(fs[k], fakeFile{dir, fmt.Sprintf("f%d-%d", step, i), 1 + rng.Intn(12)})
				}
				for k := range fs {
					addFakeFilesUnder(t, db, roots[k], "/"+string("rs"[k]), fs[k])
				}
				if step > 0 {
					err := db.Write(ctx, func(tx *Tx) error {
						b, err := tx.ScanBatch(1, naming.HashSHA256)
						if err != nil {
							return err
						}
						defer b.Close()
						return b.LoseFolder(fmt.Sprintf("/%c/d%d/s%d", "rs"[rng.Intn(2)], rng.Intn(5), rng.Intn(3)))
					})
					if err != nil {
						t.Fatal(err)
					}
				}
				if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
					t.Fatal(err)
				}
				if got, want := keptLines(t, db), searchLines(t, db); !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d %+v: kept\n%q\nsearch\n%q", seed, step, way, got, want)
				}
			}
		}
	}
}

// The lists of a pair name every file once, and end, whatever the files
// are named: here two paths that read alike ("p/Q" and a file named
// "p › Q"), Q being a name that " ~<id>", cut to 255 bytes, leaves as it is.
func TestPairListNamesEnd(t *testing.T) {
	q := strings.Repeat("a", 100) + strings.Repeat(" ~63", 40) + ".jpg"
	for i := 0; i < 10; i++ {
		q = naming.WithID("p › "+q, 63, true)[len("p › "):]
	}
	fs := []relFile{{id: 62, rel: "p › " + q}, {id: 63, rel: "p/" + q}, {id: 64, rel: "z"}}
	got := peopleNames(fs)
	seen := map[string]bool{}
	for i, f := range got {
		if f.id != fs[i].id || seen[f.name] || len(f.name) > naming.MaxName {
			t.Errorf("file %d: %d %q", i, f.id, f.name)
		}
		seen[f.name] = true
	}
}
