package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/store/naming"
)

// groupKeys reports the groups as key -> paths.
func groupKeys(tb testing.TB, db *DB, q GroupQuery) map[string][]string {
	tb.Helper()
	out := map[string][]string{}
	err := db.Files().Report(context.Background(), q, nil, func(g Group, files []GroupFile) error {
		for _, f := range files {
			out[g.Key()] = append(out[g.Key()], f.Path)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestGroupsCountInodesNotPaths(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	done := func(name string, ino uint64, h byte) FileStat {
		return FileStat{Name: name, Size: 10, Dev: 1, Ino: ino, Nlink: 1, Hash: &FileHash{Status: HashDone, Content: sum(h)}}
	}
	// Two hard links of one inode alone: no group.
	addFiles(t, db, r.ID, "/r", done("link1", 5, 1), done("link2", 5, 1))
	if g := groupKeys(t, db, GroupQuery{MinSize: 1}); len(g) != 0 {
		t.Fatalf("two hard links alone made a group: %v", g)
	}
	// A real copy joins them: one group of three paths, two inodes.
	folder := addFiles(t, db, r.ID, "/r/sub", done("copy", 6, 1))
	g := groupKeys(t, db, GroupQuery{MinSize: 1})
	if len(g) != 1 {
		t.Fatalf("want one group, got %v", g)
	}
	for _, paths := range g {
		if len(paths) != 3 {
			t.Fatalf("group paths: %v", paths)
		}
	}
	var gr Group
	db.Files().Report(ctx, GroupQuery{MinSize: 1}, nil, func(x Group, _ []GroupFile) error { gr = x; return nil })
	if gr.FileCount != 3 || gr.InodeCount != 2 || gr.Wasted() != 10 {
		t.Fatalf("group counts: %+v wasted %d", gr, gr.Wasted())
	}
	// The copy goes missing: the group disappears, its row keeps its id.
	err := db.Write(ctx, func(tx *Tx) error {
		b, _ := tx.ScanBatch(1, "sha256")
		defer b.Close()
		return b.LoseFile(fileID(t, db, folder, "copy"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if g := groupKeys(t, db, GroupQuery{MinSize: 1}); len(g) != 0 {
		t.Fatalf("group survived its copy going missing: %v", g)
	}
	got, err := db.Files().GroupByKey(ctx, "sha256", sum(1))
	if err != nil || got.ContentID != gr.ContentID || got.InodeCount != 1 {
		t.Fatalf("content row after the group broke: %+v %v", got, err)
	}
}

func TestReportKeysetCursor(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	var files []FileStat
	ino := uint64(1)
	// 12 groups: some share file count and total size, to exercise the
	// tie-breakers.
	for g := 0; g < 12; g++ {
		copies := 2 + g%3
		for c := 0; c < copies; c++ {
			files = append(files, FileStat{Name: "g" + itoa(g) + "c" + itoa(c), Size: int64(100 + g%2), Dev: 1, Ino: ino,
				Hash: &FileHash{Status: HashDone, Content: sum(byte(g + 1))}})
			ino++
		}
	}
	addFiles(t, db, r.ID, "/r", files...)
	all := []string{}
	db.Files().Report(ctx, GroupQuery{MinSize: 1}, nil, func(g Group, _ []GroupFile) error { all = append(all, g.Key()); return nil })
	if len(all) != 12 {
		t.Fatalf("%d groups, want 12", len(all))
	}
	var paged []string
	var after *GroupCursor
	for {
		var page []Group
		err := db.Files().Report(ctx, GroupQuery{MinSize: 1, After: after, Limit: 5}, nil, func(g Group, _ []GroupFile) error {
			page = append(page, g)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range page {
			paged = append(paged, g.Key())
		}
		if len(page) < 5 {
			break
		}
		c := page[len(page)-1].Cursor()
		after = &c
	}
	if len(paged) != len(all) {
		t.Fatalf("paged %d groups, want %d", len(paged), len(all))
	}
	for i := range all {
		if paged[i] != all[i] {
			t.Fatalf("page order differs at %d: %s vs %s", i, paged[i], all[i])
		}
	}
	var st GroupStats
	db.Files().Report(ctx, GroupQuery{MinSize: 1}, func(s GroupStats) error { st = s; return nil }, func(Group, []GroupFile) error { return nil })
	if st.Groups != 12 || st.Files != int64(len(files)) || st.RedundantFiles != int64(len(files)-12) {
		t.Fatalf("stats: %+v", st)
	}
}

func TestParseKey(t *testing.T) {
	ok := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if algo, s, err := naming.ParseKey(ok); err != nil || algo != "sha256" || len(s) != 32 {
		t.Fatalf("ParseKey(%q) = %q %x %v", ok, algo, s, err)
	}
	for _, bad := range []string{"", "sha256", "md5:00", "sha256:ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
		"sha256:0123", "blake3:zz23456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", ".Trash", "autorun.inf"} {
		if _, _, err := naming.ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}

// bulkIndex opens a new index with a root /r and starts a bulk load in it.
func bulkIndex(t *testing.T) (*DB, Root) {
	t.Helper()
	db := openTest(t)
	r, _, _ := db.Files().AddRoot(context.Background(), RootSpec{Path: "/r"}, false)
	err := db.Write(context.Background(), func(tx *Tx) error {
		on, err := tx.StartBulkLoad()
		if err == nil && !on {
			t.Fatal("no bulk load on an empty index")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return db, r
}

// The groups a bulk load counts when it ends are those the row-by-row
// recount finds: two or more inodes per content, hard links counted once.
func TestBulkLoadCountsGroupsByInode(t *testing.T) {
	ctx := context.Background()
	db, r := bulkIndex(t)
	done := func(name string, dev, ino uint64, h byte) FileStat {
		return FileStat{Name: name, Size: 10, Dev: dev, Ino: ino, Nlink: 1, Hash: &FileHash{Status: HashDone, Content: sum(h)}}
	}
	addFiles(t, db, r.ID, "/r",
		done("links-a", 1, 5, 1), done("links-b", 1, 5, 1), // one inode: no group
		done("two-links-a", 1, 6, 2), done("two-links-b", 1, 6, 2), done("and-a-copy", 1, 7, 2), // 3 files, 2 inodes
		done("same-ino-other-dev-a", 1, 8, 3), done("same-ino-other-dev-b", 2, 8, 3), // 2 inodes
		done("alone", 1, 9, 4))
	err := db.Write(ctx, func(tx *Tx) error { return tx.EndBulkLoad() })
	if err != nil {
		t.Fatal(err)
	}
	want := map[byte][2]int64{2: {3, 2}, 3: {2, 2}}
	var n int
	db.r.QueryRow("SELECT count(*) FROM contents").Scan(&n)
	if n != len(want) {
		t.Fatalf("%d content rows, want %d", n, len(want))
	}
	for h, w := range want {
		g, err := db.Files().GroupByKey(ctx, "sha256", sum(h))
		if err != nil || g.FileCount != w[0] || g.InodeCount != w[1] {
			t.Fatalf("content %d: %+v %v, want %d files, %d inodes", h, g, err, w[0], w[1])
		}
	}
}

// A bulk load's end records the hashes read whole before it in the rows
// of their files still partial, and counts their groups: hard links of a
// file read get its hash, a file changed since its read (another mtime)
// and a row already hashed are left as they are.
func TestBulkLoadRecordsKnownHashes(t *testing.T) {
	ctx := context.Background()
	db, r := bulkIndex(t)
	partial := func(name string, ino uint64, mtime int64) FileStat {
		return FileStat{Name: name, Size: 20000, MtimeNS: mtime, Dev: 1, Ino: ino, Nlink: 1,
			Hash: &FileHash{Status: HashPartial, Prefix: sql.NullInt64{Int64: 7, Valid: true}}}
	}
	done := partial("done", 13, 1)
	done.Hash = &FileHash{Status: HashDone, Content: sum(6)}
	folder := addFiles(t, db, r.ID, "/r", partial("a", 10, 1), partial("a-link", 10, 1), partial("b", 11, 1),
		partial("changed", 12, 1), done)
	asked := 0
	known := func() []KnownHash {
		asked++
		return []KnownHash{{Size: 20000, MtimeNS: 1, Dev: 1, Ino: 10, Sum: sum(5)}, {Size: 20000, MtimeNS: 1, Dev: 1, Ino: 11, Sum: sum(5)},
			{Size: 20000, MtimeNS: 2, Dev: 1, Ino: 12, Sum: sum(5)}, {Size: 20000, MtimeNS: 1, Dev: 1, Ino: 13, Sum: sum(5)}}
	}
	if err := db.Write(ctx, func(tx *Tx) error { return tx.EndBulkLoadWith(known) }); err != nil {
		t.Fatal(err)
	}
	if asked != 1 {
		t.Errorf("the known hashes were asked for %d times, want once", asked)
	}
	for name, want := range map[string]string{"a": HashDone, "a-link": HashDone, "b": HashDone, "changed": HashPartial, "done": HashDone} {
		var status string
		var hash []byte
		err := db.r.QueryRow("SELECT hash_status, content_hash FROM files WHERE id = ?", fileID(t, db, folder, name)).Scan(&status, &hash)
		if err != nil {
			t.Fatal(err)
		}
		wantHash := map[string][]byte{HashDone: sum(5)}[want]
		if name == "done" {
			wantHash = sum(6)
		}
		if status != want || !bytes.Equal(hash, wantHash) {
			t.Errorf("%s: %s %x, want %s %x", name, status, hash, want, wantHash)
		}
	}
	g, err := db.Files().GroupByKey(ctx, "sha256", sum(5))
	if err != nil || g.FileCount != 3 || g.InodeCount != 2 {
		t.Fatalf("group of the known hash: %+v %v, want 3 files, 2 inodes", g, err)
	}
}

// A bulk load's end and the recount of a write count groups alike: the
// same files give the same rows of contents either way, whatever the
// chunks the load's end reads them in.
func TestBulkLoadAndWritesCountGroupsAlike(t *testing.T) {
	for _, chunk := range []int{1, 3, 1 << 14} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			defer func(c, r int) { groupChunk, copyRows = c, r }(groupChunk, copyRows)
			// And PostgreSQL's COPYs of new files.
			groupChunk, copyRows = chunk, chunk
			testBulkLoadAndWritesCountGroupsAlike(t)
		})
	}
}

func testBulkLoadAndWritesCountGroupsAlike(t *testing.T) {
	ctx := context.Background()
	done := func(name string, dev, ino uint64, h byte) FileStat {
		return FileStat{Name: name, Size: 10 + int64(h), Dev: dev, Ino: ino, Nlink: 1, Hash: &FileHash{Status: HashDone, Content: sum(h)}}
	}
	files := []FileStat{done("links-a", 1, 5, 1), done("links-b", 1, 5, 1),
		done("two-links-a", 1, 6, 2), done("two-links-b", 1, 6, 2), done("and-a-copy", 1, 7, 2),
		done("same-ino-other-dev-a", 1, 8, 3), done("same-ino-other-dev-b", 2, 8, 3),
		done("alone", 1, 9, 4), done("x", 1, 10, 5), done("y", 1, 11, 5), done("z", 1, 12, 5)}
	rowsOf := func(db *DB) []string {
		rows, err := db.r.Query("SELECT hash_algo, content_hash, size, file_count, inode_count FROM contents ORDER BY content_hash")
		out, err := collect("read contents", rows, err, func(r rowScanner) (string, error) {
			var algo string
			var h []byte
			var size, files, inodes int64
			err := r.Scan(&algo, &h, &size, &files, &inodes)
			return fmt.Sprintf("%s:%x size %d files %d inodes %d", algo, h, size, files, inodes), err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	bulk, r := bulkIndex(t)
	addFiles(t, bulk, r.ID, "/r", files...)
	if err := bulk.Write(ctx, func(tx *Tx) error { return tx.EndBulkLoad() }); err != nil {
		t.Fatal(err)
	}
	rowByRow := openTest(t)
	r2, _, _ := rowByRow.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	addFiles(t, rowByRow, r2.ID, "/r", files...)
	got, want := rowsOf(bulk), rowsOf(rowByRow)
	if len(want) != 3 || !slices.Equal(got, want) {
		t.Fatalf("bulk load counted\n%s\nwrites counted\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A bulk load settles as unique the pending files whose size no other
// inode shares, and only those: hard links of one inode share nothing,
// the same inode number on two devices is two inodes. It settles them a
// range of rows at a time (three here), and notes only the shared sizes
// for the hash job to plan.
func TestBulkLoadSettlesUniqueSizesByInode(t *testing.T) {
	ctx := context.Background()
	defer func(r int64) { bulkRange = r }(bulkRange)
	bulkRange = 3
	db, r := bulkIndex(t)
	pending := func(name string, size int64, dev, ino uint64) FileStat {
		return FileStat{Name: name, Size: size, Dev: dev, Ino: ino, Nlink: 1}
	}
	folder := addFiles(t, db, r.ID, "/r",
		pending("alone", 10, 1, 1),
		pending("link-a", 20, 1, 2), pending("link-b", 20, 1, 2),
		pending("two-a", 30, 1, 3), pending("two-b", 30, 1, 4),
		pending("dev-a", 40, 1, 5), pending("dev-b", 40, 2, 5),
		pending("links-and-dev-a", 50, 1, 6), pending("links-and-dev-b", 50, 1, 6), pending("links-and-dev-c", 50, 3, 6),
		pending("u1", 61, 1, 11), pending("u2", 62, 1, 12), pending("u3", 63, 1, 13), pending("u4", 64, 1, 14))
	// The load's own writes note no size: its end notes the shared ones,
	// under an epoch later than any a hash run could have planned.
	var noted, before int64
	db.r.QueryRow("SELECT count(*) FROM dirty_sizes").Scan(&noted)
	db.r.QueryRow("SELECT value FROM counters WHERE name = 'scan_epoch'").Scan(&before)
	if noted != 0 {
		t.Errorf("%d sizes noted during the load, want none", noted)
	}
	if err := db.Write(ctx, func(tx *Tx) error { return tx.EndBulkLoad() }); err != nil {
		t.Fatal(err)
	}
	var stale int64
	db.r.QueryRow(`SELECT count(*) FROM dirty_sizes WHERE epoch <> ?
		OR epoch <> (SELECT value FROM counters WHERE name = 'scan_epoch')`, before+1).Scan(&stale)
	if stale != 0 {
		t.Errorf("%d sizes noted under another epoch than the bumped one (%d)", stale, before+1)
	}
	want := map[string]string{"alone": HashUnique, "link-a": HashUnique, "link-b": HashUnique,
		"two-a": HashPending, "two-b": HashPending, "dev-a": HashPending, "dev-b": HashPending,
		"links-and-dev-a": HashPending, "links-and-dev-b": HashPending, "links-and-dev-c": HashPending,
		"u1": HashUnique, "u2": HashUnique, "u3": HashUnique, "u4": HashUnique}
	for name, st := range want {
		var got string
		if err := db.r.QueryRow("SELECT hash_status FROM files WHERE folder_id = ? AND name = ?", folder, name).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != st {
			t.Errorf("%s: %s, want %s", name, got, st)
		}
	}
	rows, err := db.r.Query("SELECT size FROM dirty_sizes ORDER BY size")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var sizes []int64
	for rows.Next() {
		var s int64
		rows.Scan(&s)
		sizes = append(sizes, s)
	}
	if !slices.Equal(sizes, []int64{30, 40, 50}) {
		t.Errorf("sizes left to plan: %v, want the shared ones (30, 40, 50)", sizes)
	}
}
