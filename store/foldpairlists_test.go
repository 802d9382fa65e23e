package store

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/store/naming"
)

// diffInMemory is what diffPair finds, the plain way: every file of both
// folders held, matched by content term in path order.
func diffInMemory(t *testing.T, db *DB, a, b string) pairDiff {
	type file struct {
		id, size int64
		rel      string
		term     Sig
	}
	read := func(dir string) []file {
		rows, err := db.query(context.Background(), `SELECT d.path, f.name, f.id, `+termCols("f")+` FROM `+subtreeFilesSQL,
			subtreeArgs(db.host.ID, dir)...)
		var d, name string
		var id int64
		r := termRow{algo: db.hashAlgo}
		dst := append([]any{&d, &name, &id}, r.dest()...)
		fs, err := collect("test", rows, err, func(rs rowScanner) (file, error) {
			if err := rs.Scan(dst...); err != nil {
				return file{}, err
			}
			t, _ := r.term(db.host.ID)
			p := naming.JoinPath(d, name)
			return file{id: id, size: r.size, rel: strings.TrimPrefix(strings.TrimPrefix(p, dir), "/"), term: t}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(fs, func(i, j int) bool { return fs[i].rel < fs[j].rel })
		return fs
	}
	fa, fb := read(a), read(b)
	var d pairDiff
	inB, inA := map[Sig]int{}, map[Sig]int{}
	for _, f := range fb {
		inB[f.term]++
	}
	var only [2][]relFile
	for _, f := range fa {
		if inB[f.term] > 0 {
			inB[f.term]--
			inA[f.term]++
			d.sharedBytes += f.size
			continue
		}
		only[0] = append(only[0], relFile{id: f.id, rel: f.rel})
	}
	for _, f := range fb {
		if inA[f.term] > 0 {
			inA[f.term]--
			continue
		}
		only[1] = append(only[1], relFile{id: f.id, rel: f.rel})
	}
	d.only[0], d.only[1] = peopleNames(only[0]), peopleNames(only[1])
	return d
}

// diffPair, reading a content at a time, finds what the plain way does:
// contents held several times on either side (the first by path shared),
// links of inodes never hashed whole, names whose order differs from
// their folders' ("b0" sorts after "b/c", "b.txt" before it).
func TestDiffPairEqualsInMemory(t *testing.T) {
	ctx := context.Background()
	for seed := int64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewSource(seed))
		db := openTest(t)
		r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
		if err != nil {
			t.Fatal(err)
		}
		dirs := []string{"", "/b", "/b/c", "/b0", "/b.txt", "/a b"}
		names := []string{"b", "b0", "b.txt", "c", "x y", "é"}
		var fs []fakeFile
		seen := map[string]bool{}
		for _, top := range []string{"/r/p", "/r/q"} {
			for i := 0; i < 60; i++ {
				dir, name := top+dirs[rng.Intn(len(dirs))], names[rng.Intn(len(names))]+fmt.Sprint(rng.Intn(3))
				if seen[dir+"/"+name] {
					continue
				}
				seen[dir+"/"+name] = true
				c := 1 + rng.Intn(15)
				if rng.Intn(5) == 0 {
					c = -c
				}
				fs = append(fs, fakeFile{dir, name, c})
			}
		}
		addFakeFilesUnder(t, db, r.ID, "/r", fs)
		got, err := db.diffPair(ctx, listFolder{path: "/r/p", host: db.host.ID}, listFolder{path: "/r/q", host: db.host.ID})
		if err != nil {
			t.Fatal(err)
		}
		if want := diffInMemory(t, db, "/r/p", "/r/q"); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d:\ngot  %+v\nwant %+v", seed, got, want)
		}
		if len(got.only[0]) == 0 || len(got.only[1]) == 0 || got.sharedBytes == 0 {
			t.Fatalf("seed %d: nothing to compare: %+v", seed, got)
		}
	}
}

// The lists of a pair keep each file under its name for people, whose
// parts are escaped (naming.PeoplePath): a name of any bytes — not UTF-8,
// a code point of the block PostgreSQL's text escapes use, a quote, a
// backslash — is stored and found again as the view shows it, and the
// file's own path comes back byte for byte.
func TestPairListsKeepNamesOfAnyBytes(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	odd := map[string]string{"/r/p/x\xff\U0010FF41\u2028\"q\\": "/r/p", "/r/q/s\xfe/y\xfe": "/r/q"}
	fs := []fakeFile{{"/r/p", "a", 1}, {"/r/p", "b", 2}, {"/r/p", "c", 3}, {"/r/q", "a", 1}, {"/r/q", "b", 2}, {"/r/q", "c", 3}}
	for p := range odd {
		fs = append(fs, fakeFile{p[:strings.LastIndexByte(p, '/')], p[strings.LastIndexByte(p, '/')+1:], 9 + len(fs)})
	}
	addFakeFilesUnder(t, db, r.ID, "/r", fs)
	if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	ps, err := db.View().PairsPage(ctx, 0, 10)
	if err != nil || len(ps) != 1 {
		t.Fatalf("pairs %+v, %v; want /r/p and /r/q", ps, err)
	}
	seen := 0
	for side := range 2 {
		files, err := db.View().PairFilesPage(ctx, ps[0].ID, side, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			top, ok := odd[f.Path]
			if want := naming.PeoplePath("", strings.TrimPrefix(f.Path, top+"/")); !ok || f.Name != want {
				t.Errorf("side %d: %q named %q, want one of the odd files named as the view shows it", side, f.Path, f.Name)
				continue
			}
			seen++
			if g, err := db.View().PairFileByName(ctx, ps[0].ID, side, f.Name); err != nil || g.Path != f.Path {
				t.Errorf("side %d: %q found as %q (%v)", side, f.Name, g.Path, err)
			}
		}
	}
	if seen != len(odd) {
		t.Errorf("%d odd files listed, want %d", seen, len(odd))
	}
}
