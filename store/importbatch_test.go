package store

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// An import copies the source's actions a round at a time, in a few
// statements each round, whatever the ledger holds: live actions and the
// roles they hold, done ones whose copies are in the Trash (their rows
// come from the source, missing), files with odd names, files under no
// folder of the index. (Copied one by one, an action cost four round trips
// to the server inside the write every host waits for.)
func TestImportLedgerInRounds(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := Open(ctx, Options{Path: path, Host: Host{Name: "old", MachineID: "m1"}})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := old.Files().AddRoot(ctx, RootSpec{Path: "/data"}, false)
	if err != nil {
		t.Fatal(err)
	}
	// Pairs kN, cN of content N; dN the copies a done trash moved away;
	// two files of odd names; a1, a2 under a folder the index lacks.
	var here, there []FileStat
	file := func(name string, ino, content int) FileStat {
		return FileStat{Name: name, Size: int64(100 + content), MtimeNS: 1, Dev: 1, Ino: uint64(ino), Nlink: 1,
			Hash: &FileHash{Status: HashDone, Content: sum(byte(content))}}
	}
	const pairs, trashed = 10, 5
	for i := range pairs {
		here = append(here, file(fmt.Sprintf("k%d", i), 10*i+1, i), file(fmt.Sprintf("c%d", i), 10*i+2, i))
		if i < trashed {
			there = append(there, file(fmt.Sprintf("d%d", i), 10*i+3, i))
		}
	}
	odd1, odd2 := "n\nx\xff", "t\xfe "
	here = append(here, file(odd1, 500, 50), file(odd2, 501, 50))
	data := addFiles(t, old, r.ID, "/data", append(here, there...)...)
	away := addFiles(t, old, r.ID, "/data/away", file("a1", 600, 60), file("a2", 601, 60))
	ref := func(folder int64, dir, name string, ino, content int) (FileRef, []byte) {
		return FileRef{FileID: fileID(t, old, folder, name), Path: dir + "/" + name, Dev: 1, Ino: uint64(ino), MtimeNS: 1}, sum(byte(content))
	}
	spec := func(op string, keep, cp FileRef, h []byte, size int64) ActionSpec {
		return ActionSpec{Unit: naming.GroupKey(naming.HashSHA256, h), Op: op, Algo: naming.HashSHA256, Hash: h, Size: size, Keep: keep, Copy: cp}
	}
	var live []ActionSpec
	for i := range pairs {
		k, h := ref(data, "/data", fmt.Sprintf("k%d", i), 10*i+1, i)
		c, _ := ref(data, "/data", fmt.Sprintf("c%d", i), 10*i+2, i)
		live = append(live, spec(OpLink, k, c, h, int64(100+i)))
	}
	k, h := ref(data, "/data", odd1, 500, 50)
	c, _ := ref(data, "/data", odd2, 501, 50)
	live = append(live, spec(OpLink, k, c, h, 150))
	plan(t, old, live...) // left planned: its actions hold their roles
	var done []ActionSpec
	for i := range trashed {
		k, h := ref(data, "/data", fmt.Sprintf("k%d", i), 10*i+1, i)
		d, _ := ref(data, "/data", fmt.Sprintf("d%d", i), 10*i+3, i)
		done = append(done, spec(OpTrash, k, d, h, int64(100+i)))
	}
	a1, h := ref(away, "/data/away", "a1", 600, 60)
	a2, _ := ref(away, "/data/away", "a2", 601, 60)
	done = append(done, spec(OpTrash, a1, a2, h, 160))
	trash, err := old.Ledger().CreatePlan(ctx, PlanSpec{Op: OpTrash, Worker: "w", LeaseTTL: time.Minute}, done)
	if err != nil || trash.Actions != len(done) {
		t.Fatalf("the trash plan: %+v, %v", trash, err)
	}
	for range done {
		a := claim(t, old, trash.ID, "w")
		if err := old.Write(ctx, func(tx *Tx) error {
			if err := tx.ArmAction(a.Lease, UndoInfo{Mode: 0o644, TrashFile: "/data/.Trash-0/files/" + filepath.Base(a.Copy.Path),
				TrashInfo: "/data/.Trash-0/info/x.trashinfo", TrashPath: a.Copy.Path}); err != nil {
				return err
			}
			if err := tx.FileGone(a.Copy.FileID); err != nil {
				return err
			}
			if err := tx.EndAction(a.Lease, ActDone, "", a.Size); err != nil {
				return err
			}
			return tx.CloseDonePlans()
		}); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	src, err := OpenSource(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	db := openTest(t)
	root, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/data"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Ledger().StartImport(ctx, src); err != nil {
		t.Fatal(err)
	}
	folder := addFiles(t, db, root.ID, "/data", here...) // the scan: no dN, no /data/away
	defer func(n int) { importChunk, importTrips = n, nil }(importChunk)
	importChunk = 4
	trips := 0
	importTrips = func(n int) { trips = n }
	led, err := db.Ledger().ImportLedger(ctx, src, func(w string) bool { return w == "w" }) // the plans' runs died
	all := len(live) + len(done)
	if err != nil || led.Actions != int64(all) || led.Plans != 2 || led.Unknown != 2 {
		t.Fatalf("the ledger imported: %+v, %v; want %d actions of 2 plans, 2 files unknown", led, err, all)
	}
	if rounds := (all + importChunk - 1) / importChunk; trips > 5*rounds {
		t.Errorf("%d statements for %d actions in %d rounds", trips, all, rounds)
	}
	if ms, err := db.Ledger().CheckRoles(ctx); err != nil || len(ms) != 0 {
		t.Fatalf("roles: %+v, %v", ms, err)
	}
	as, err := db.Ledger().Actions(ctx, ActionQuery{})
	if err != nil || len(as) != all {
		t.Fatalf("actions: %d, %v", len(as), err)
	}
	for _, a := range as {
		dir, name := filepath.Split(a.Copy.Path)
		switch {
		case dir == "/data/away/":
			if a.Copy.FileID != 0 || a.Keep.FileID != 0 {
				t.Errorf("%s names files %d, %d; want none", a.Copy.Path, a.Copy.FileID, a.Keep.FileID)
			}
		case name[0] == 'd':
			var missing bool
			var content []byte
			if err := db.r.QueryRow("SELECT missing, content_hash FROM files WHERE id = ? AND name = ?", a.Copy.FileID, name).
				Scan(&missing, &content); err != nil || !missing || !bytes.Equal(content, a.Hash) {
				t.Errorf("the trashed %s: missing %v, hash %x, %v", name, missing, content, err)
			}
		default:
			if a.Copy.FileID != fileID(t, db, folder, name) || a.Keep.FileID != fileID(t, db, folder, filepath.Base(a.Keep.Path)) {
				t.Errorf("%q names files %d, %d", a.Copy.Path, a.Copy.FileID, a.Keep.FileID)
			}
		}
	}
}
