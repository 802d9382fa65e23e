package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/store/naming"
)

// sourceFixture builds an index file at path as a SQLite index of one host
// leaves it: root /data with a and b (one content, b a hard link of a by
// a done link plan), c (a large file, its prefix hashed), d (pending), x
// and y (one content, y moved to the Trash by a done trash plan).
func sourceFixture(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, Options{Path: path, Host: Host{Name: "old", MachineID: "m1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/data", Excludes: []string{"*.tmp"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	done := func(s []byte) *FileHash { return &FileHash{Status: HashDone, Content: s} }
	folder := addFiles(t, db, r.ID, "/data",
		FileStat{Name: "a", Size: 100, MtimeNS: 1, Dev: 1, Ino: 10, Nlink: 1, Hash: done(sum(1))},
		FileStat{Name: "b", Size: 100, MtimeNS: 2, Dev: 1, Ino: 11, Nlink: 1, Hash: done(sum(1))},
		FileStat{Name: "c", Size: 1 << 20, MtimeNS: 3, Dev: 1, Ino: 12, Nlink: 1,
			Hash: &FileHash{Status: HashPartial, Prefix: sql.NullInt64{Int64: 42, Valid: true}}},
		FileStat{Name: "d", Size: 7, MtimeNS: 4, Dev: 1, Ino: 13, Nlink: 1},
		FileStat{Name: "x", Size: 200, MtimeNS: 5, Dev: 1, Ino: 14, Nlink: 1, Hash: done(sum(2))},
		FileStat{Name: "y", Size: 200, MtimeNS: 6, Dev: 1, Ino: 15, Nlink: 1, Hash: done(sum(2))})
	ref := func(name string, ino uint64, mtime int64) FileRef {
		return FileRef{FileID: fileID(t, db, folder, name), Path: "/data/" + name, Dev: 1, Ino: ino, MtimeNS: mtime}
	}
	act := func(op string, keep, cp FileRef, s []byte, size int64, effect func(tx *Tx, a Action) error) {
		spec := ActionSpec{Unit: naming.GroupKey(naming.HashSHA256, s), Op: op, Algo: naming.HashSHA256, Hash: s, Size: size,
			Keep: keep, Copy: cp}
		p := plan(t, db, spec).ID
		a := claim(t, db, p, "w")
		if err := db.Write(ctx, func(tx *Tx) error {
			if op == OpTrash {
				if err := tx.ArmAction(a.Lease, UndoInfo{Mode: 0o644, TrashFile: "/data/.Trash-0/files/y",
					TrashInfo: "/data/.Trash-0/info/y.trashinfo", TrashPath: "/data/y"}); err != nil {
					return err
				}
			}
			if err := effect(tx, a); err != nil {
				return err
			}
			if err := tx.EndAction(a.Lease, ActDone, "", size); err != nil {
				return err
			}
			return tx.CloseDonePlans()
		}); err != nil {
			t.Fatal(err)
		}
		if err := db.Ledger().LetPlanGo(ctx, p, "w"); err != nil { // as its run does as it ends
			t.Fatal(err)
		}
	}
	act(OpLink, ref("a", 10, 1), ref("b", 11, 2), sum(1), 100, func(tx *Tx, a Action) error {
		return tx.FileLinked(a.Copy.FileID, a.Keep, 2)
	})
	act(OpTrash, ref("x", 14, 5), ref("y", 15, 6), sum(2), 200, func(tx *Tx, a Action) error {
		return tx.FileGone(a.Copy.FileID)
	})
}

// An index file imported into another index: the hashes it holds are
// given by folder, only for files it holds live and hashed; its plans and
// actions become the importing host's, naming this index's rows of their
// files (the row of a copy in the Trash comes from the file, missing, with
// its hash), and holding their roles; a second import changes nothing;
// and the file is never written.
func TestImportTakesOverHashesAndLedger(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	sourceFixture(t, path)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src, err := OpenSource(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if roots, err := src.Roots(ctx); err != nil || len(roots) != 1 || roots[0].Path != "/data" || roots[0].Excludes[0] != "*.tmp" {
		t.Fatalf("roots of the source: %+v %v", roots, err)
	}
	prior, err := src.FolderHashes(ctx, "/data")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range prior {
		names = append(names, n)
	}
	if len(prior) != 4 || prior["b"].Stamp != (Stamp{Size: 100, MtimeNS: 1, Dev: 1, Ino: 10}) ||
		!bytes.Equal(prior["b"].Hash.Content, sum(1)) || prior["c"].Hash.Status != HashPartial || prior["c"].Hash.Prefix.Int64 != 42 {
		t.Fatalf("hashes of /data: %v (%+v)", names, prior)
	}

	db, err := Open(ctx, Options{Path: testIndex(t), Host: Host{Name: "laptop", MachineID: "m1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, begun, err := db.Ledger().ImportMark(ctx, src); begun || err != nil {
		t.Fatalf("an import not begun: %v %v", begun, err)
	}
	// What the import's scan writes: the files on disk, with the
	// source's hashes (y is in the Trash).
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/data"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Ledger().StartImport(ctx, src); err != nil {
		t.Fatal(err)
	}
	var files []FileStat
	for _, n := range []string{"a", "b", "c", "x"} {
		p := prior[n]
		h := p.Hash
		files = append(files, FileStat{Name: n, Size: p.Stamp.Size, MtimeNS: p.Stamp.MtimeNS, Dev: p.Stamp.Dev, Ino: p.Stamp.Ino,
			Nlink: 1, Hash: &h})
	}
	folder := addFiles(t, db, r.ID, "/data", files...)
	if m, begun, err := db.Ledger().ImportMark(ctx, src); !begun || m.Done || m.Host != "laptop" || err != nil {
		t.Fatalf("an import begun: %+v %v %v", m, begun, err)
	}

	for i := 0; i < 2; i++ {
		led, err := db.Ledger().ImportLedger(ctx, src, func(string) bool { return false })
		want := ImportedLedger{Plans: 2, Actions: 2}
		if i == 1 {
			want = ImportedLedger{}
		}
		if err != nil || led != want {
			t.Fatalf("import %d of the ledger: %+v %v, want %+v", i+1, led, err, want)
		}
	}
	if m, _, _ := db.Ledger().ImportMark(ctx, src); !m.Done {
		t.Fatalf("the import is not recorded done: %+v", m)
	}
	plans, err := db.Ledger().Plans(ctx, 0, 0)
	if err != nil || len(plans) != 2 || plans[0].Op != OpTrash || plans[1].Op != OpLink || plans[0].Counts[ActDone] != 1 {
		t.Fatalf("this host's plans: %+v %v", plans, err)
	}
	as, err := db.Ledger().Actions(ctx, ActionQuery{})
	if err != nil || len(as) != 2 {
		t.Fatalf("actions: %+v %v", as, err)
	}
	link, trash := as[0], as[1]
	if link.Copy.FileID != fileID(t, db, folder, "b") || link.Keep.FileID != fileID(t, db, folder, "a") || link.State != ActDone {
		t.Errorf("the link names files %d and %d", link.Copy.FileID, link.Keep.FileID)
	}
	if trash.Undo.TrashFile != "/data/.Trash-0/files/y" || trash.Keep.FileID != fileID(t, db, folder, "x") {
		t.Errorf("the trash action: %+v", trash)
	}
	var missing bool
	var content []byte
	if err := db.r.QueryRow("SELECT missing, content_hash FROM files WHERE id = ? AND name = 'y'", trash.Copy.FileID).
		Scan(&missing, &content); err != nil || !missing || !bytes.Equal(content, sum(2)) {
		t.Errorf("the trashed copy's row: missing %v, hash %x, %v", missing, content, err)
	}
	if got := roles(t, db); len(got) != 1 || got["/data/x"] != RoleKeep {
		t.Errorf("roles: %v", got)
	}
	src.Close()
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("the imported file was written")
	}
}

// A ledger that crosses an action of the index it is imported into is
// refused whole: nothing of it is written, and the import is not done.
func TestImportRefusesACrossedLedger(t *testing.T) {
	ctx := context.Background()
	src, _ := fixtureSource(t)
	db := openTest(t)
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/data"}, false)
	if err != nil {
		t.Fatal(err)
	}
	folder := addFiles(t, db, r.ID, "/data",
		FileStat{Name: "x", Size: 200, MtimeNS: 5, Dev: 1, Ino: 14, Nlink: 1, Hash: &FileHash{Status: HashDone, Content: sum(2)}},
		FileStat{Name: "z", Size: 200, MtimeNS: 7, Dev: 1, Ino: 16, Nlink: 1, Hash: &FileHash{Status: HashDone, Content: sum(2)}})
	// A live plan of this index acts on x, which the imported trash keeps.
	plan(t, db, ActionSpec{Unit: "u", Op: OpLink, Algo: naming.HashSHA256, Hash: sum(2), Size: 200,
		Keep: FileRef{FileID: fileID(t, db, folder, "z"), Path: "/data/z", Dev: 1, Ino: 16, MtimeNS: 7},
		Copy: FileRef{FileID: fileID(t, db, folder, "x"), Path: "/data/x", Dev: 1, Ino: 14, MtimeNS: 5}})
	if err := db.Ledger().StartImport(ctx, src); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ledger().ImportLedger(ctx, src, func(string) bool { return false }); !errors.Is(err, ErrRoleTaken) {
		t.Fatalf("a crossed ledger: %v, want ErrRoleTaken", err)
	}
	if plans, _ := db.Ledger().Plans(ctx, 0, 0); len(plans) != 1 {
		t.Errorf("%d plans after a refused import, want this index's one", len(plans))
	}
	if m, _, _ := db.Ledger().ImportMark(ctx, src); m.Done {
		t.Error("a refused import is recorded done")
	}
}

// What is no dupefs index, or of another dupefs, is refused as a source,
// and never written.
func TestOpenSourceRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	junk, other, older := filepath.Join(dir, "junk.db"), filepath.Join(dir, "other.db"), filepath.Join(dir, "older.db")
	os.WriteFile(junk, []byte("my notes\n"), 0o600)
	o, err := sql.Open("sqlite", "file:"+other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Exec("CREATE TABLE notes (t TEXT)"); err != nil {
		t.Fatal(err)
	}
	o.Close()
	olderIndex(t, older)
	olderBytes, _ := os.ReadFile(older)
	for _, c := range []struct {
		path string
		want error
		says string
	}{
		{filepath.Join(dir, "none.db"), ErrNoIndex, "no such file"},
		{junk, ErrCorrupt, "not a SQLite database"},
		{other, ErrCorrupt, "another program"},
		{older, ErrOldSchema, "root ls"},
		{"postgres://u@h/db", ErrCantOpen, "not a PostgreSQL database"},
	} {
		_, err := OpenSource(ctx, c.path)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("source %s: %v, want %v saying %q", filepath.Base(c.path), err, c.want, c.says)
		}
	}
	if b, _ := os.ReadFile(older); !bytes.Equal(b, olderBytes) {
		t.Error("the older index was written")
	}
}

// A plan of the source still open under its lease is a run under way,
// unless its worker is known dead; a done plan is none.
func TestSourceRunUnderWay(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	sourceFixture(t, path)
	db, err := Open(ctx, Options{Path: path, Host: Host{Name: "old", MachineID: "m1"}})
	if err != nil {
		t.Fatal(err)
	}
	open := plan(t, db, ledgerSpec(t, db))
	db.Close()
	src, err := OpenSource(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, dead := range []bool{false, true} {
		p, live, err := src.RunUnderWay(ctx, func(string) bool { return dead })
		if err != nil || live == dead || (live && (p.ID != open.ID || p.Op != OpLink)) {
			t.Errorf("worker dead %v: run under way %v (%+v), %v", dead, live, p, err)
		}
	}
}

// ledgerSpec is an action on sourceFixture's index that no action there
// crosses: keep /data/x, link /data/a to it.
func ledgerSpec(t *testing.T, db *DB) ActionSpec {
	t.Helper()
	var folder int64
	db.r.QueryRow("SELECT id FROM folders WHERE path = '/data'").Scan(&folder)
	return ActionSpec{Unit: "again", Op: OpLink, Algo: naming.HashSHA256, Hash: sum(2), Size: 200,
		Keep: FileRef{FileID: fileID(t, db, folder, "x"), Path: "/data/x", Dev: 1, Ino: 14, MtimeNS: 5},
		Copy: FileRef{FileID: fileID(t, db, folder, "a"), Path: "/data/a", Dev: 1, Ino: 10, MtimeNS: 1}}
}
