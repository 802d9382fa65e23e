package store

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/store/naming"
)

// addGroups adds n groups under root /r, group i of content sum-like
// hash i holding inodes(i) inodes of size(i) bytes, copy j in folder
// /r/<i>/<j> named name(i, j).
func addGroups(tb testing.TB, db *DB, n int, size func(i int) int64, inodes func(i int) int, name func(i, j int) string) {
	tb.Helper()
	ctx := context.Background()
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		tb.Fatal(err)
	}
	ino := uint64(0)
	for start := 0; start < n; start += 5000 {
		err := db.Write(ctx, func(tx *Tx) error {
			b, err := tx.ScanBatch(1, db.HashAlgo())
			if err != nil {
				return err
			}
			defer b.Close()
			for i := start; i < min(n, start+5000); i++ {
				h := make([]byte, 32)
				copy(h, fmt.Sprintf("%08d", i))
				for j := 0; j < inodes(i); j++ {
					folder, err := b.AddFolder(r.ID, 0, fmt.Sprintf("/r/%d/%d", i, j), "", nil)
					if err != nil {
						return err
					}
					ino++
					st := FileStat{Name: name(i, j), Size: size(i), Dev: 1, Ino: ino, Nlink: 1,
						Hash: &FileHash{Status: HashDone, Content: h}}
					if err := b.AddFile(r.ID, folder, st); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// TestWastePageRanks pages through groups in rank order with every page
// size and skip, ties of waste included, and checks each group's name.
func TestWastePageRanks(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	// Wastes: 10·1, 5·3, 10·1 (a tie), 30·0 ... by i.
	size := func(i int) int64 { return int64(10 + 5*(i%3)) }
	inodes := func(i int) int { return 2 + i%4 }
	name := func(i, j int) string {
		if j == 0 {
			return "first.txt"
		}
		return fmt.Sprintf("n%d", i%2)
	}
	const n = 23
	addGroups(t, db, n, size, inodes, name)
	type ranked struct {
		waste int64
		hash  []byte
	}
	var want []ranked
	for i := 0; i < n; i++ {
		h := make([]byte, 32)
		copy(h, fmt.Sprintf("%08d", i))
		want = append(want, ranked{size(i) * int64(inodes(i)-1), h})
	}
	slices.SortFunc(want, func(a, b ranked) int {
		if a.waste != b.waste {
			return int(b.waste - a.waste)
		}
		return bytes.Compare(a.hash, b.hash)
	})
	if c, err := db.View().GroupCount(ctx); err != nil || c != n {
		t.Fatalf("GroupCount = %d, %v", c, err)
	}
	for _, limit := range []int{1, 2, 5, 30} {
		for _, skip := range []int{0, 1, 3} {
			var got []GroupInfo
			var after *WasteCursor
			for {
				page, err := db.View().WastePage(ctx, after, skip, limit)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, page...)
				if len(page) < limit {
					break
				}
				c := page[len(page)-1].Cursor()
				after = &c
			}
			// Each page leaves out skip groups after the cursor.
			var exp []ranked
			for i := skip; i < len(want); i += limit + skip {
				exp = append(exp, want[i:min(len(want), i+limit)]...)
			}
			if len(got) != len(exp) {
				t.Fatalf("limit %d skip %d: %d groups, want %d", limit, skip, len(got), len(exp))
			}
			for i := range exp {
				if got[i].Waste() != exp[i].waste || !bytes.Equal(got[i].Hash, exp[i].hash) {
					t.Fatalf("limit %d skip %d, #%d: waste %d %x, want %d %x", limit, skip, i, got[i].Waste(), got[i].Hash, exp[i].waste, exp[i].hash)
				}
				var idx int
				fmt.Sscanf(string(got[i].Hash[:8]), "%d", &idx)
				// With 2 inodes the names tie: the first copy's.
				wantName := fmt.Sprintf("n%d", idx%2)
				if inodes(idx) == 2 {
					wantName = "first.txt"
				}
				places, err := db.View().PlacesOf(ctx, []int64{got[i].ID})
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, p := range places[got[i].ID] {
					names = append(names, p.Name)
				}
				if n := naming.CommonName(names); n != wantName || got[i].Files != int64(inodes(idx)) {
					t.Fatalf("group %d: name %q, %d copies; want %q, %d", idx, n, got[i].Files, wantName, inodes(idx))
				}
			}
		}
	}
	g, err := db.View().GroupByID(ctx, 1)
	if err != nil || g.Inodes != 2 || g.Waste() != 10 {
		t.Fatalf("GroupByID(1) = %+v, %v", g, err)
	}
	ps, err := db.View().PlacesOf(ctx, []int64{2, 1, 999})
	if err != nil || len(ps) != 2 || len(ps[2]) != 3 || len(ps[1]) != 2 || ps[2][0].Path() != "/r/1/0/first.txt" ||
		ps[2][2].Path() != "/r/1/2/n1" || ps[2][0].FileID > ps[2][1].FileID {
		t.Fatalf("PlacesOf(2, 1, 999) = %+v, %v", ps, err)
	}
	names, err := db.View().CopyNames(ctx, []int64{2, 1, 999})
	if err != nil || len(names) != 2 || strings.Join(names[2], ",") != "first.txt,n1,n1" || strings.Join(names[1], ",") != "first.txt,n0" {
		t.Fatalf("CopyNames(2, 1, 999) = %v, %v", names, err)
	}
}

// TestWastePageUsesItsIndex: every part of the page query is a range of
// contents_waste, with no sort of the groups.
func TestWastePageUsesItsIndex(t *testing.T) {
	db := openTest(t)
	for _, q := range []string{
		`SELECT id FROM contents WHERE ` + isGroup + ` ORDER BY ` + wasteOf + ` DESC, hash_algo, content_hash LIMIT 10`,
		`SELECT id FROM contents WHERE ` + isGroup + ` AND ` + wasteOf + ` = 5 AND (hash_algo, content_hash) > ('sha256', x'00')
			ORDER BY hash_algo, content_hash LIMIT 10`,
		`SELECT id FROM contents WHERE ` + isGroup + ` AND ` + wasteOf + ` < 5
			ORDER BY ` + wasteOf + ` DESC, hash_algo, content_hash LIMIT 10`,
	} {
		rows, err := db.r.Query("EXPLAIN QUERY PLAN " + q)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			rows.Scan(&id, &parent, &notused, &detail)
			plan = append(plan, detail)
		}
		rows.Close()
		p := strings.Join(plan, "; ")
		if !strings.Contains(p, "contents_waste") || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s\nplan: %s", q, p)
		}
	}
}

// BenchmarkWastePage walks 100k groups in rank order a page at a time,
// with the places of their copies.
func BenchmarkWastePage(b *testing.B) {
	ctx := context.Background()
	db := openTest(b)
	addGroups(b, db, 100000, func(i int) int64 { return 1000 + int64(i%7) }, func(int) int { return 3 },
		func(i, j int) string { return fmt.Sprintf("f%d", j) })
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var after *WasteCursor
		n := 0
		for {
			page, err := db.View().WastePage(ctx, after, 0, 256)
			if err != nil {
				b.Fatal(err)
			}
			ids := make([]int64, len(page))
			for i, g := range page {
				ids[i] = g.ID
			}
			if _, err := db.View().PlacesOf(ctx, ids); err != nil {
				b.Fatal(err)
			}
			n += len(page)
			if len(page) < 256 {
				break
			}
			c := page[len(page)-1].Cursor()
			after = &c
		}
		if n != 100000 {
			b.Fatalf("%d groups", n)
		}
	}
}
