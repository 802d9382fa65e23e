package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
)

// Keeps of the pairs write the same rows and lists pair by pair as staged
// (PostgreSQL; on SQLite both are pair by pair): pairs shown and made,
// relabelled, relisted or not, hidden and shown again.
func TestPairWritesStagedEqualOneByOne(t *testing.T) {
	defer func(m int) { pgPairsMin = m }(pgPairsMin)
	list := func(names ...string) *pairDiff {
		d := &pairDiff{sharedBytes: int64(len(names))}
		for i, n := range names {
			d.only[i%2] = append(d.only[i%2], onlyFile{id: int64(100 + i), name: n})
		}
		return d
	}
	pair := func(a, b, shared int64, shown bool, label string) storedPair {
		return storedPair{pairRow: pairRow{a: a, b: b, shared: shared, union: b, shown: shown}, label: label}
	}
	type keep struct {
		rows  []storedPair
		lists map[pairKey]*pairDiff
	}
	keeps := []keep{
		{[]storedPair{pair(1, 2, 1, true, "a"), pair(3, 4, 1, true, "b"), pair(5, 6, 1, false, "")},
			map[pairKey]*pairDiff{keyOf(1, 2): list("x", "y", "z"), keyOf(3, 4): list("p\nq")}},
		// 1-2 counted again, its lists kept; 3-4 relabelled and
		// relisted; 5-6 shown now; 7-8 made shown.
		{[]storedPair{pair(1, 2, 2, true, ""), pair(3, 4, 1, true, "c"), pair(5, 6, 1, true, "e"), pair(7, 8, 1, true, "g")},
			map[pairKey]*pairDiff{keyOf(3, 4): list("r", "s"), keyOf(5, 6): list("t"), keyOf(7, 8): list("u", "v")}},
		// 1-2 and 7-8 hidden: their lists go; 3-4 retired.
		{[]storedPair{pair(1, 2, 2, false, ""), pair(5, 6, 1, true, ""), pair(7, 8, 1, false, "")}, nil},
		// 3-4 back, shown, with a list.
		{[]storedPair{pair(3, 4, 3, true, "c2"), pair(5, 6, 1, true, "")}, map[pairKey]*pairDiff{keyOf(3, 4): list("w")}},
	}
	run := func(t *testing.T, min int) []string {
		pgPairsMin = min
		ctx := context.Background()
		db := openTest(t)
		var out []string
		for i, k := range keeps {
			storePlan(t, db, k.rows, k.lists)
			lines := pairLines(t, db)
			for _, key := range slices.Sorted(maps.Keys(lines)) {
				out = append(out, fmt.Sprintf("keep %d: %s %s", i, key, lines[key]))
			}
			rows, err := db.query(ctx, `SELECT p.a_id, o.side, o.file_id, o.name FROM folder_pair_files o
				JOIN folder_pairs p ON p.id = o.pair_id ORDER BY p.a_id, o.side, o.id`)
			files, err := collect("test", rows, err, func(r rowScanner) (string, error) {
				var a, side, id int64
				var name string
				err := r.Scan(&a, &side, &id, &name)
				return fmt.Sprintf("keep %d: list of %d side %d: %d %q", i, a, side, id, name), err
			})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, files...)
		}
		return out
	}
	var staged, single []string
	t.Run("staged", func(t *testing.T) { staged = run(t, 1) })
	t.Run("single", func(t *testing.T) { single = run(t, 1<<30) })
	if !slices.Equal(staged, single) {
		t.Errorf("staged:\n%s\none by one:\n%s", fmt.Sprint(staged), fmt.Sprint(single))
	}
	if len(single) == 0 {
		t.Error("nothing written")
	}
}
