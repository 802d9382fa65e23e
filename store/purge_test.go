package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// purgeFixture indexes under /r: a, b and f alike (a folder group, and
// the groups of contents 1 and 2), c/z and d/z2 (a group of 2 of content 3),
// gone/sub/w, and e/p and e/q (content 5), p linked to q by a done action.
func purgeFixture(t *testing.T, db *DB, live func(dir, name string) bool) {
	t.Helper()
	ctx := context.Background()
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	var fs []fakeFile
	for _, f := range []fakeFile{{"/r/a", "x", 1}, {"/r/a", "y", 2}, {"/r/b", "x", 1}, {"/r/b", "y", 2},
		{"/r/f", "x", 1}, {"/r/f", "y", 2},
		{"/r/c", "z", 3}, {"/r/d", "z2", 3}, {"/r/gone/sub", "w", 4}, {"/r/e", "p", 5}, {"/r/e", "q", 5}} {
		if live == nil || live(f.dir, f.name) {
			fs = append(fs, f)
		}
	}
	addFakeFiles(t, db, r.ID, fs)
	if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
}

// lose marks the files at paths (dir/name) and the folders at dirs
// missing, as a scan does.
func lose(t *testing.T, db *DB, files []string, dirs ...string) {
	t.Helper()
	ctx := context.Background()
	err := db.Write(ctx, func(tx *Tx) error {
		b, err := tx.ScanBatch(1, naming.HashSHA256)
		if err != nil {
			return err
		}
		defer b.Close()
		for _, p := range files {
			var id int64
			if err := tx.tx.QueryRowContext(tx.ctx, `SELECT f.id FROM files f JOIN folders d ON d.id = f.folder_id
				WHERE d.path || '/' || f.name = ?`, p).Scan(&id); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if err := b.LoseFile(id); err != nil {
				return err
			}
		}
		for _, d := range dirs {
			if err := b.LoseFolder(d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
}

// rowsOf lists the rows (path and missing flag) of files and folders.
func rowsOf(t *testing.T, db *DB) string {
	t.Helper()
	rows, err := db.r.Query(`SELECT path, missing FROM folders
		UNION ALL SELECT d.path || '/' || f.name, f.missing FROM files f JOIN folders d ON d.id = f.folder_id
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		var m bool
		rows.Scan(&p, &m)
		if m {
			p += " (missing)"
		}
		out = append(out, p)
	}
	return strings.Join(out, "\n")
}

// groupsOf lists what the view and the folder report show: groups with
// their counts, folder groups with their members, and the sums of every
// present folder that holds a file.
func groupsOf(t *testing.T, db *DB) string {
	t.Helper()
	ctx := context.Background()
	var out []string
	rows, err := db.r.Query(`SELECT hex(content_hash), size, file_count, inode_count FROM contents
		WHERE ` + isGroup + ` ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var h string
		var size, files, inodes int64
		rows.Scan(&h, &size, &files, &inodes)
		out = append(out, fmt.Sprintf("group %s… %d B %d files %d inodes", h[:8], size, files, inodes))
	}
	rows.Close()
	gs, err := db.Folders().FolderGroups(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		var ps []string
		for _, f := range g.Folders {
			ps = append(ps, f.Path)
		}
		out = append(out, fmt.Sprintf("folder group %d files %d B %v", g.Files, g.Bytes, ps))
	}
	rows, err = db.r.Query(`SELECT path, own_files, own_bytes, hex(coalesce(own_sig, x'')), tree_files, tree_bytes,
		hex(coalesce(tree_sig, x'')) FROM folders WHERE missing = 0 AND tree_files > 0 ORDER BY path`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var p, os, ts string
		var of, ob, tf, tb int64
		rows.Scan(&p, &of, &ob, &os, &tf, &tb, &ts)
		out = append(out, fmt.Sprintf("%s own %d %d %s tree %d %d %s", p, of, ob, os, tf, tb, ts))
	}
	rows.Close()
	if bad, err := db.Folders().VerifyFolderSigs(ctx); err != nil || len(bad) > 0 {
		t.Fatalf("folder signatures: %v %q", err, bad)
	}
	return strings.Join(out, "\n")
}

// purgeAll queues a purge with keep and runs it to the end in batches of
// limit, and returns the rows each batch deleted.
func purgeAll(t *testing.T, db *DB, keep time.Duration, limit int) []string {
	t.Helper()
	ctx := context.Background()
	if _, err := db.Maint().EnqueuePurge(ctx, keep); err != nil {
		t.Fatal(err)
	}
	j, err := db.Maint().ClaimPurge(ctx, "w", time.Minute)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var batches []string
	for {
		files, folders, err := db.Maint().PurgeBatch(ctx, j, limit)
		if err != nil {
			t.Fatal(err)
		}
		if files+folders == 0 {
			break
		}
		if files+folders > int64(limit) {
			t.Fatalf("a batch of %d deleted %d files and %d folders", limit, files, folders)
		}
		batches = append(batches, fmt.Sprintf("%d+%d", files, folders))
	}
	if err := db.Maint().FinishPurge(ctx, j, nil); err != nil {
		t.Fatal(err)
	}
	return batches
}

// Rows missing for longer than the grace go, in batches, unless a done
// action refers to them; younger ones stay. The groups, folder groups and
// folder signatures after the purge are those of an index of the files
// left, and nothing waits to be recounted.
func TestPurgeMissingRows(t *testing.T) {
	ctx := context.Background()
	clk := fakeClock(t)
	db := openTest(t)
	purgeFixture(t, db, nil)
	var p, q ActionSpec
	db.r.QueryRow("SELECT id, dev, ino, mtime_ns, content_hash FROM files WHERE name = 'p'").Scan(
		&p.Copy.FileID, &p.Copy.Dev, &p.Copy.Ino, &p.Copy.MtimeNS, &p.Hash)
	db.r.QueryRow("SELECT id, dev, ino, mtime_ns FROM files WHERE name = 'q'").Scan(
		&q.Keep.FileID, &q.Keep.Dev, &q.Keep.Ino, &q.Keep.MtimeNS)
	spec := ActionSpec{Unit: naming.GroupKey(naming.HashSHA256, p.Hash), Op: OpLink, Algo: naming.HashSHA256,
		Hash: p.Hash, Size: 105, Copy: p.Copy, Keep: q.Keep}
	spec.Copy.Path, spec.Keep.Path = "/r/e/p", "/r/e/q"
	a := claim(t, db, plan(t, db, spec).ID, "w")
	end(t, db, a, ActDone)

	// Gone an hour and ten minutes ago: d/z2, gone/ and all in it, e/p
	// (which the done action refers to). Gone forty minutes ago: b/y.
	lose(t, db, []string{"/r/d/z2", "/r/e/p"}, "/r/gone")
	clk.Advance(30 * time.Minute)
	lose(t, db, []string{"/r/b/y"})
	clk.Advance(40 * time.Minute)

	w, err := db.Maint().PurgeWaiting(ctx)
	if err != nil || w.KeepMissing != DefaultKeepMissing || w.Missing != 4 || w.Due != 2 || w.Folders != 2 {
		t.Fatalf("waiting: %+v %v", w, err)
	}
	// A scan of the root under way or due holds its rows.
	if err := db.Write(ctx, func(tx *Tx) error {
		_, err := tx.exec("queue scan", `INSERT INTO jobs (kind, root_id, created_at, updated_at)
			VALUES ('scan', (SELECT id FROM roots), 0, 0)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if ok, err := db.Maint().EnqueuePurge(ctx, time.Hour); ok || err != nil {
		t.Fatalf("a purge was queued while a scan is due: %v %v", ok, err)
	}
	if err := db.Write(ctx, func(tx *Tx) error {
		_, err := tx.exec("end scan", "UPDATE jobs SET status = 'completed'")
		return err
	}); err != nil {
		t.Fatal(err)
	}

	batches := purgeAll(t, db, time.Hour, 2)
	// z2 and w, then sub (emptied), then gone (emptied).
	if got, want := strings.Join(batches, " "), "2+0 0+1 0+1"; got != want {
		t.Errorf("batches %q, want %q", got, want)
	}
	want := strings.Join([]string{"/r", "/r/a", "/r/a/x", "/r/a/y", "/r/b", "/r/b/x", "/r/b/y (missing)",
		"/r/c", "/r/c/z", "/r/d", "/r/e", "/r/e/p (missing)", "/r/e/q", "/r/f", "/r/f/x", "/r/f/y"}, "\n")
	if got := rowsOf(t, db); got != want {
		t.Errorf("rows after the purge:\n%s\nwant:\n%s", got, want)
	}
	var dirtyFolders, dirtyContents int
	db.r.QueryRow("SELECT (SELECT count(*) FROM folder_dirty), (SELECT count(*) FROM content_dirty)").Scan(
		&dirtyFolders, &dirtyContents)
	if dirtyFolders+dirtyContents > 0 {
		t.Errorf("the purge left %d folders and %d contents to recount", dirtyFolders, dirtyContents)
	}
	js, _ := db.Maint().PurgeJobs(ctx, 1)
	if j := js[0]; j.Status != "completed" || j.Files != 2 || j.Folders != 2 || j.Batches != 4 {
		t.Errorf("job: %+v", j)
	}

	fresh := openTest(t)
	purgeFixture(t, fresh, func(dir, name string) bool {
		return !strings.HasPrefix(dir, "/r/gone") && name != "z2" && name != "p" && !(dir == "/r/b" && name == "y")
	})
	got, wantGroups := groupsOf(t, db), groupsOf(t, fresh)
	if got != wantGroups {
		t.Errorf("after the purge:\n%s\nfresh index:\n%s", got, wantGroups)
	}
	// The group of content 3 (c/z, d/z2) is gone with d/z2; a and f are
	// still a folder group.
	c3 := make([]byte, 32)
	binary.BigEndian.PutUint32(c3, 3)
	if strings.Contains(got, fmt.Sprintf("group %X", c3[:4])) || !strings.Contains(got, "[/r/a /r/f]") {
		t.Errorf("the group of c/z and d/z2 still shows:\n%s", got)
	}

	// Forty minutes on, b/y is past the grace too; e/p stays while its
	// action may be undone.
	clk.Advance(40 * time.Minute)
	if got := strings.Join(purgeAll(t, db, time.Hour, 500), " "); got != "1+0" {
		t.Errorf("second purge: batches %q, want 1+0", got)
	}
	if got := rowsOf(t, db); strings.Contains(got, "/r/b/y") || !strings.Contains(got, "/r/e/p (missing)") {
		t.Errorf("rows after the second purge:\n%s", got)
	}
	if w, _ := db.Maint().PurgeWaiting(ctx); w.Missing != 1 || w.Due != 0 {
		t.Errorf("waiting after the second purge: %+v", w)
	}
}

// A batch of a worker whose lease was taken over deletes nothing; the new
// holder carries on.
func TestPurgeBatchIsFenced(t *testing.T) {
	ctx := context.Background()
	clk := fakeClock(t)
	db := openTest(t)
	purgeFixture(t, db, nil)
	lose(t, db, []string{"/r/a/x", "/r/b/x", "/r/c/z"})
	clk.Advance(2 * time.Hour)
	if ok, err := db.Maint().EnqueuePurge(ctx, time.Hour); !ok || err != nil {
		t.Fatalf("enqueue: %v %v", ok, err)
	}
	if ok, _ := db.Maint().EnqueuePurge(ctx, time.Hour); ok {
		t.Fatal("two purge jobs active at once")
	}
	a, err := db.Maint().ClaimPurge(ctx, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n, _, err := db.Maint().PurgeBatch(ctx, a, 1); n != 1 || err != nil {
		t.Fatalf("first batch: %d %v", n, err)
	}
	clk.Advance(2 * time.Minute)
	b, err := db.Maint().ClaimPurge(ctx, "b", time.Minute)
	if err != nil || b.Lease.Attempt != 2 || b.ErrorCode != CodeLeaseExpired {
		t.Fatalf("take over: %+v %v", b, err)
	}
	before := rowsOf(t, db)
	if n, _, err := db.Maint().PurgeBatch(ctx, a, 1); n != 0 || !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the stale worker's batch: %d %v", n, err)
	}
	if got := rowsOf(t, db); got != before {
		t.Fatalf("the stale worker's batch deleted rows:\n%s\nbefore:\n%s", got, before)
	}
	for {
		n, _, err := db.Maint().PurgeBatch(ctx, b, 1)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if err := db.Maint().FinishPurge(ctx, a, nil); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the stale worker finished the job: %v", err)
	}
	if err := db.Maint().FinishPurge(ctx, b, nil); err != nil {
		t.Fatal(err)
	}
	js, _ := db.Maint().PurgeJobs(ctx, 1)
	if j := js[0]; j.Status != "completed" || j.Files != 3 {
		t.Fatalf("job: %+v", j)
	}
}
