package store

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
)

// diffPairs, reading the folders of many pairs at once in batches, makes
// the lists diffPair makes pair by pair: folders nested in one another,
// names that continue a folder's ("/b0", "/b.txt" beside "/b"), and pairs
// too large for a batch.
func TestDiffPairsEqualDiffPair(t *testing.T) {
	ctx := context.Background()
	defer func(n int64) { pairListRows = n }(pairListRows)
	for seed := int64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewSource(seed))
		db := openTest(t)
		r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
		if err != nil {
			t.Fatal(err)
		}
		dirs := []string{"", "/b", "/b/c", "/b0", "/b.txt", "/a b"}
		var fs []fakeFile
		seen := map[string]bool{}
		for _, top := range []string{"/r/p", "/r/q", "/r/p/s"} {
			for i := 0; i < 50; i++ {
				dir, name := top+dirs[rng.Intn(len(dirs))], fmt.Sprint("f", rng.Intn(8))
				if seen[dir+"/"+name] {
					continue
				}
				seen[dir+"/"+name] = true
				c := 1 + rng.Intn(12)
				if rng.Intn(5) == 0 {
					c = -c
				}
				fs = append(fs, fakeFile{dir, name, c})
			}
		}
		addFakeFilesUnder(t, db, r.ID, "/r", fs)
		rows, err := db.query(ctx, `SELECT id, path, host_id FROM folders ORDER BY id`)
		folders, err := collect("test", rows, err, func(rs rowScanner) (f listFolder, err error) {
			err = rs.Scan(&f.id, &f.path, &f.host)
			return f, err
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range folders {
			f := &folders[i]
			if err := db.queryRow(ctx, `SELECT count(*) FROM `+subtreeFilesSQL, subtreeArgs(f.host, f.path)...).Scan(&f.files); err != nil {
				t.Fatal(err)
			}
		}
		var ps []listPair
		for i, a := range folders {
			for _, b := range folders[i+1:] {
				ps = append(ps, listPair{a, b})
			}
		}
		for _, budget := range []int64{1 << 15, 60, 1} {
			pairListRows = budget
			got, err := db.diffPairs(ctx, ps)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(ps) {
				t.Fatalf("seed %d, budget %d: %d lists for %d pairs", seed, budget, len(got), len(ps))
			}
			for _, p := range ps {
				want, err := db.diffPair(ctx, p.a, p.b)
				if err != nil {
					t.Fatal(err)
				}
				if g := got[keyOf(p.a.id, p.b.id)]; !reflect.DeepEqual(*g, want) {
					t.Fatalf("seed %d, budget %d, %s and %s:\ngot  %+v\nwant %+v", seed, budget, p.a.path, p.b.path, *g, want)
				}
			}
		}
	}
}
