package store

import (
	"context"
	"fmt"
	"maps"
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
	defer func(c, s int64, m, b, p int) {
		scopeCostPerContent, pairMovesShare, maxPairMoves, scopeBudget, sharedPage = c, s, m, b, p
	}(scopeCostPerContent, pairMovesShare, maxPairMoves, scopeBudget, sharedPage)
	ctx := context.Background()
	for seed := int64(1); seed <= 8; seed++ {
		for _, way := range []struct {
			cost   int64
			moves  int
			budget int   // rows a scope may hold: 0, none (SQLite counts, contents read in pages)
			share  int64 // pairMovesShare: 0, around however many moved
		}{{0, 1 << 30, 1 << 16, 0}, {1 << 40, 1 << 30, 1 << 16, 0}, {20, 0, 1 << 16, 0}, {0, 1 << 30, 0, 0},
			{1 << 40, 1 << 30, 0, 0}, {0, 1 << 30, 6, 0}, {20, 1 << 30, 1 << 16, 4}} {
			if way.budget < 1<<16 && seed > 3 {
				continue // the same code as above, with SQLite counting: fewer seeds
			}
			scopeCostPerContent, maxPairMoves, scopeBudget, sharedPage = way.cost, way.moves, way.budget, 2
			pairMovesShare = way.share
			rng := rand.New(rand.NewSource(seed))
			db := openTest(t)
			roots := twoRoots(t, db)
			for step := 0; step < 5; step++ {
				var fs [2][]fakeFile
				for i := 0; i < 25; i++ {
					k := rng.Intn(2)
					dir := fmt.Sprintf("/%c/d%d/s%d", "rs"[k], rng.Intn(5), rng.Intn(3))
					if rng.Intn(3) == 0 {
						dir = path.Dir(dir)
					}
					c := 1 + rng.Intn(12)
					if rng.Intn(6) == 0 {
						c = -c // a link of an inode of another file
					}
					fs[k] = append(fs[k], fakeFile{dir, fmt.Sprintf("f%d-%d", step, i), c})
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

// A scope holds no more than scopeBudget rows of contents, whatever the
// size of the folders it measures: a big pair (400 files against 300 of
// them and 100 more, 100 of them links of inodes never hashed whole) is
// measured and found from its contents with a budget of 50 rows, and the
// pairs kept are those a search of every folder keeps.
func TestScopeHoldsBoundedRows(t *testing.T) {
	defer func(c, s int64, b, p int) {
		scopeCostPerContent, pairMovesShare, scopeBudget, sharedPage = c, s, b, p
		scopeHook = nil
	}(scopeCostPerContent, pairMovesShare, scopeBudget, sharedPage)
	scopeBudget, sharedPage, pairMovesShare = 50, 7, 0
	peak, scopes := 0, 0
	scopeHook = func(s *pairScope) { peak, scopes = max(peak, s.peak), scopes+1 }
	ctx := context.Background()
	for _, cost := range []int64{0, 1 << 40} { // found from contents, from file counts
		scopeCostPerContent = cost
		db := openTest(t)
		roots := twoRoots(t, db)
		var a, b []fakeFile
		for i := 1; i <= 400; i++ {
			c := i
			if i%4 == 0 {
				c = -i
			}
			a = append(a, fakeFile{fmt.Sprintf("/r/a/%d", i%7), fmt.Sprint("f", i), c})
			if i <= 300 {
				b = append(b, fakeFile{fmt.Sprintf("/s/b/%d", i%5), fmt.Sprint("f", i), c})
			} else {
				b = append(b, fakeFile{"/s/b", fmt.Sprint("g", i), 1000 + i})
			}
		}
		addFakeFilesUnder(t, db, roots[0], "/r", a)
		addFakeFilesUnder(t, db, roots[1], "/s", b)
		if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
			t.Fatal(err)
		}
		// Each step moves both folders' sums: their pair is measured
		// again around them.
		for step := 0; step < 3; step++ {
			addFakeFilesUnder(t, db, roots[0], "/r", []fakeFile{{"/r/a/new", fmt.Sprint("n", step), 2000 + step}})
			addFakeFilesUnder(t, db, roots[1], "/s", []fakeFile{{"/s/b/new", fmt.Sprint("n", step), 3000 + step}})
			if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
				t.Fatal(err)
			}
			got, want := keptLines(t, db), searchLines(t, db)
			if !slices.Equal(got, want) {
				t.Fatalf("cost %d step %d: kept\n%q\nsearch\n%q", cost, step, got, want)
			}
			if !slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, "/r/a | /s/b | ") }) {
				t.Fatalf("cost %d step %d: the big pair is not kept: %q", cost, step, got)
			}
		}
	}
	if scopes == 0 {
		t.Fatal("no search around moved folders ran")
	}
	if peak > scopeBudget {
		t.Errorf("a scope held %d rows, past its budget of %d", peak, scopeBudget)
	}
}

// Folders alike whose shared contents are each held by more than
// MaxSeedFolders folders are no candidates: around a moved folder, as in
// the search of every folder, whether the scope holds their contents or
// SQLite counts them.
func TestScopeSeedsLikeASearch(t *testing.T) {
	defer func(c int64, b int) { scopeCostPerContent, scopeBudget = c, b }(scopeCostPerContent, scopeBudget)
	scopeCostPerContent = 1 << 40 // partners by file counts, each asked whether it seeds
	ctx := context.Background()
	for _, budget := range []int{1 << 16, 0} {
		scopeBudget = budget
		db := openTest(t)
		r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
		if err != nil {
			t.Fatal(err)
		}
		// 40 contents, each in MaxSeedFolders+1 folders; q holds them
		// and 10 more of its own, and p 35 of them and one seeding.
		var fs []fakeFile
		for k := 0; k <= MaxSeedFolders; k++ {
			for c := 0; c < 40; c++ {
				fs = append(fs, fakeFile{fmt.Sprintf("/r/o/%d", k), fmt.Sprint("f", c), 5000 + c})
			}
		}
		for c := 0; c < 50; c++ {
			fs = append(fs, fakeFile{"/r/q", fmt.Sprint("f", c), 5000 + c})
		}
		for c := 0; c < 35; c++ {
			fs = append(fs, fakeFile{"/r/p", fmt.Sprint("f", c), 5000 + c})
		}
		fs = append(fs, fakeFile{"/r/p", "seed", 6000}, fakeFile{"/r/q", "seed", 6000})
		addFakeFilesUnder(t, db, r.ID, "/r", fs)
		if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
			t.Fatal(err)
		}
		addFakeFilesUnder(t, db, r.ID, "/r", []fakeFile{{"/r/q", "moved", 7000}})
		if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
			t.Fatal(err)
		}
		got, want := keptLines(t, db), searchLines(t, db)
		if !slices.Equal(got, want) {
			t.Fatalf("budget %d: kept\n%q\nsearch\n%q", budget, got, want)
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], "/r/p | /r/q | ") {
			t.Errorf("budget %d: kept %q, want the pair of p and q alone", budget, got)
		}
	}
}

// A fold of the sums alone leaves the kept pairs as they were, and the
// next whole fold keeps those a search of every folder keeps, however
// many folds of the sums came between.
func TestPairsLeftOwedBySums(t *testing.T) {
	ctx := context.Background()
	for seed := int64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewSource(seed))
		db := openTest(t)
		roots := twoRoots(t, db)
		for step := 0; step < 8; step++ {
			for k := range roots {
				var fs []fakeFile
				for i := 0; i < 12; i++ {
					dir := fmt.Sprintf("/%c/d%d/s%d", "rs"[k], rng.Intn(4), rng.Intn(3))
					fs = append(fs, fakeFile{dir, fmt.Sprintf("f%d-%d", step, i), 1 + rng.Intn(10)})
				}
				addFakeFilesUnder(t, db, roots[k], "/"+string("rs"[k]), fs)
			}
			if step%3 != 2 {
				before := keptLines(t, db)
				if _, err := db.Folders().UpdateFolderSums(ctx); err != nil {
					t.Fatal(err)
				}
				if got := keptLines(t, db); !slices.Equal(got, before) {
					t.Fatalf("seed %d step %d: a fold of the sums moved the pairs\n%q\nto\n%q", seed, step, before, got)
				}
				continue
			}
			if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
				t.Fatal(err)
			}
			if got, want := keptLines(t, db), searchLines(t, db); !slices.Equal(got, want) {
				t.Fatalf("seed %d step %d: kept\n%q\nsearch\n%q", seed, step, got, want)
			}
		}
	}
}

// Pairs the keep did not hold and does not show are written in batches:
// a new one hidden, with no list, label or place in the pair feed; a
// retired row of the same folders hidden again, keeping its label and
// place and losing any list left to it.
func TestHiddenPairsBatched(t *testing.T) {
	defer func(n, m int) { hiddenPairBatch, pgPairsMin = n, m }(hiddenPairBatch, pgPairsMin)
	hiddenPairBatch, pgPairsMin = 2, 1 // on PostgreSQL, shown pairs staged too
	ctx := context.Background()
	db := openTest(t)
	keep := func(rows []storedPair, lists map[pairKey]*pairDiff) {
		t.Helper()
		storePlan(t, db, rows, lists)
	}
	pair := func(a, b int64, shown bool, label string) storedPair {
		return storedPair{pairRow: pairRow{a: a, b: b, shared: a, union: b, shown: shown}, label: label}
	}
	list := &pairDiff{only: [2][]onlyFile{{{id: 1, name: "x"}}, {{id: 2, name: "y"}}}}
	keep([]storedPair{pair(1, 2, true, "a ≈ b"), pair(3, 4, true, "c ≈ d")},
		map[pairKey]*pairDiff{keyOf(1, 2): list, keyOf(3, 4): list})
	keep([]storedPair{pair(5, 6, false, ""), pair(7, 8, false, ""), pair(9, 10, false, "")}, nil) // both retired
	var id34 int64
	if err := db.Write(ctx, func(tx *Tx) error {
		// A list left to a retired row (another process's keep, say).
		if err := tx.tx.QueryRowContext(tx.ctx, "SELECT id FROM folder_pairs WHERE a_id = 3").Scan(&id34); err != nil {
			return err
		}
		_, err := tx.exec("test", "INSERT INTO folder_pair_files (pair_id, side, file_id, name) VALUES (?, 0, 1, 'x')", id34)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before := pairLines(t, db)
	keep([]storedPair{pair(1, 2, false, ""), pair(3, 4, false, ""), pair(5, 6, false, ""), pair(11, 12, false, "")}, nil)
	after := pairLines(t, db)
	want := map[string]string{
		"1-2":   strings.Replace(before["1-2"], "state 0", "state 1", 1),
		"3-4":   strings.Replace(strings.Replace(before["3-4"], "state 0", "state 1", 1), "lists 1", "lists 0", 1),
		"5-6":   before["5-6"],
		"7-8":   before["7-8"],
		"9-10":  before["9-10"],
		"11-12": "state 1 11/12 label \"\" seq 0 lists 0",
	}
	want["7-8"] = strings.Replace(want["7-8"], "state 1", "state 0", 1)
	want["9-10"] = strings.Replace(want["9-10"], "state 1", "state 0", 1)
	for k, w := range want {
		if after[k] != w {
			t.Errorf("pair %s: %q, want %q (before %q)", k, after[k], w, before[k])
		}
	}
	if len(after) != len(want) {
		t.Errorf("%d pairs, want %d: %v", len(after), len(want), after)
	}
}

// pairLines are the rows of folder_pairs by their folders' ids, with the
// count of their lists' rows.
func pairLines(t *testing.T, db *DB) map[string]string {
	t.Helper()
	rows, err := db.query(context.Background(), `SELECT a_id, b_id, state, shared_files, union_files, label, change_seq,
		(SELECT count(*) FROM folder_pair_files o WHERE o.pair_id = p.id) FROM folder_pairs p`)
	type line struct{ k, v string }
	ls, err := collect("test", rows, err, func(r rowScanner) (line, error) {
		var a, b, state, shared, union, seq, lists int64
		var label string
		err := r.Scan(&a, &b, &state, &shared, &union, &label, &seq, &lists)
		return line{fmt.Sprintf("%d-%d", a, b), fmt.Sprintf("state %d %d/%d label %q seq %d lists %d",
			state, shared, union, label, seq, lists)}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range ls {
		out[l.k] = l.v
	}
	return out
}

// twoRoots adds the roots /r and /s and returns their ids.
func twoRoots(t *testing.T, db *DB) []int64 {
	t.Helper()
	var roots []int64
	for _, p := range []string{"/r", "/s"} {
		r, _, err := db.Files().AddRoot(context.Background(), RootSpec{Path: p}, false)
		if err != nil {
			t.Fatal(err)
		}
		roots = append(roots, r.ID)
	}
	return roots
}

// The lists of the pairs a keep writes go in together, pairListBatch rows
// a statement, each pair's in its order; a pair listed again loses its
// old lists, and a retired one all of them.
func TestPairListsBatched(t *testing.T) {
	defer func(n, m int) { pairListBatch, pgPairsMin = n, m }(pairListBatch, pgPairsMin)
	pairListBatch, pgPairsMin = 2, 1000 // on PostgreSQL, shown pairs one by one too
	ctx := context.Background()
	db := openTest(t)
	keep := func(rows []storedPair, lists map[pairKey]*pairDiff) {
		t.Helper()
		storePlan(t, db, rows, lists)
	}
	shown := func(a, b int64) storedPair {
		return storedPair{pairRow: pairRow{a: a, b: b, shared: a, union: b, shown: true}, label: "l"}
	}
	files := func(names ...string) []onlyFile {
		var fs []onlyFile
		for i, n := range names {
			fs = append(fs, onlyFile{id: int64(i + 1), name: n})
		}
		return fs
	}
	lists := func() map[string]string {
		t.Helper()
		rows, err := db.query(ctx, `SELECT p.a_id, p.b_id, f.side, f.name FROM folder_pair_files f
			JOIN folder_pairs p ON p.id = f.pair_id ORDER BY p.a_id, f.side, f.id`)
		type line struct{ k, name string }
		ls, err := collect("test", rows, err, func(r rowScanner) (l line, err error) {
			var a, b, side int64
			err = r.Scan(&a, &b, &side, &l.name)
			l.k = fmt.Sprintf("%d-%d/%d", a, b, side)
			return l, err
		})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, l := range ls {
			out[l.k] += l.name + " "
		}
		return out
	}
	keep([]storedPair{shown(1, 2), shown(3, 4), shown(5, 6)}, map[pairKey]*pairDiff{
		keyOf(1, 2): {only: [2][]onlyFile{files("c", "a", "b"), files("z")}},
		keyOf(3, 4): {only: [2][]onlyFile{nil, files("q", "p", "r", "s", "o")}},
		keyOf(5, 6): {only: [2][]onlyFile{files("m"), nil}},
	})
	want := map[string]string{"1-2/0": "c a b ", "1-2/1": "z ", "3-4/1": "q p r s o ", "5-6/0": "m "}
	if got := lists(); !maps.Equal(got, want) {
		t.Fatalf("lists %q, want %q", got, want)
	}
	// 1-2 listed again, 3-4 kept as it is, 5-6 retired, 7-8 new.
	keep([]storedPair{shown(1, 2), shown(3, 4), shown(7, 8)}, map[pairKey]*pairDiff{
		keyOf(1, 2): {only: [2][]onlyFile{files("d"), files("y", "x")}},
		keyOf(7, 8): {only: [2][]onlyFile{files("e", "f", "g"), nil}},
	})
	want = map[string]string{"1-2/0": "d ", "1-2/1": "y x ", "3-4/1": "q p r s o ", "7-8/0": "e f g "}
	if got := lists(); !maps.Equal(got, want) {
		t.Fatalf("lists %q, want %q", got, want)
	}
}

// A file renamed in a folder of a shown pair moves no sum, but the pair's
// lists are made again: here in the same fold as a file added under
// another root moves the sums of folders above neither folder of the pair,
// so the keep goes around the moved folders, whose scope never read the
// pair's folders (it panicked reading them).
func TestPairListsRenamedBesideAMove(t *testing.T) {
	defer func(s int64) { pairMovesShare = s }(pairMovesShare)
	pairMovesShare = 0 // around the moved folders, however few folders there are
	ctx := context.Background()
	db := openTest(t)
	roots := twoRoots(t, db)
	addFakeFilesUnder(t, db, roots[0], "/r", []fakeFile{{"/r/x", "f1", 1}, {"/r/x", "f2", 2}, {"/r/x", "f3", 3},
		{"/r/x", "f4", 4}, {"/r/y", "f1", 1}, {"/r/y", "f2", 2}, {"/r/y", "f3", 3}, {"/r/y", "f5", 5}})
	addFakeFilesUnder(t, db, roots[1], "/s", []fakeFile{{"/s/m", "g", 9}})
	if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	lists := func() []string {
		t.Helper()
		rows, err := db.query(ctx, `SELECT a.path, b.path, o.side, o.name FROM folder_pairs p
			JOIN folders a ON a.id = p.a_id JOIN folders b ON b.id = p.b_id
			JOIN folder_pair_files o ON o.pair_id = p.id WHERE p.state = 2 ORDER BY o.pair_id, o.side, o.id`)
		out, err := collect("test", rows, err, func(r rowScanner) (string, error) {
			var a, b, name string
			var side int
			err := r.Scan(&a, &b, &side, &name)
			return fmt.Sprintf("%s ≈ %s: %d %s", a, b, side, name), err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := lists(), []string{"/r/x ≈ /r/y: 0 f4", "/r/x ≈ /r/y: 1 f5"}; !slices.Equal(got, want) {
		t.Fatalf("lists %q, want %q", got, want)
	}
	var f4 int64
	if err := db.queryRow(ctx, `SELECT f.id FROM files f JOIN folders d ON d.id = f.folder_id
		WHERE d.path = '/r/x' AND f.name = 'f4'`).Scan(&f4); err != nil {
		t.Fatal(err)
	}
	err := db.Write(ctx, func(tx *Tx) error {
		b, err := tx.ScanBatch(1, naming.HashSHA256)
		if err != nil {
			return err
		}
		defer b.Close()
		return b.LoseFile(f4)
	})
	if err != nil {
		t.Fatal(err)
	}
	addFakeFilesUnder(t, db, roots[0], "/r", []fakeFile{{"/r/x", "f4b", 4}}) // f4 renamed
	addFakeFilesUnder(t, db, roots[1], "/s", []fakeFile{{"/s/m", "h", 10}})  // /s and /s/m move
	if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := lists(), []string{"/r/x ≈ /r/y: 0 f4b", "/r/x ≈ /r/y: 1 f5"}; !slices.Equal(got, want) {
		t.Errorf("lists %q, want %q", got, want)
	}
	if got, want := keptLines(t, db), searchLines(t, db); !slices.Equal(got, want) {
		t.Errorf("kept\n%q\nsearch\n%q", got, want)
	}
}

// storePlan writes rows and lists as a keep of the pairs would, after the
// folds the index counts.
func storePlan(t *testing.T, db *DB, rows []storedPair, lists map[pairKey]*pairDiff) {
	t.Helper()
	ctx := context.Background()
	stored, err := db.readPairs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	folds, _, err := db.foldCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	plan := pairPlan{stored: stored, rows: rows, lists: lists}
	if err := db.Write(ctx, func(tx *Tx) error { return tx.storePairs(&plan, folds) }); err != nil {
		t.Fatal(err)
	}
}
