package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
)

// A host name is what a report prints before ':' and a view puts in a
// name and under /net: a machine's host name (64 bytes at most), not a
// folder's name, no byte a terminal acts on, valid UTF-8.
func TestCheckHostName(t *testing.T) {
	for _, ok := range []string{"nas", "laptop-2", "NAS.local", "é", strings.Repeat("h", 64)} {
		if err := CheckHostName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", " ", "a:b", "a/b", "a b", "a\nb", ".", "..", strings.Repeat("h", 65),
		"e\x1b[7mvil", "a\rb", "a\x7fb", "a\xffb", "a\u0085b"} {
		if err := CheckHostName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A machine is one host: a second name for a registered machine (its host
// name changed, or a container that shares its machine id and its files)
// is refused, to write or to read, until the host is renamed: under two
// names its own files would be copies of each other, on two hosts.
func TestOneHostPerMachine(t *testing.T) {
	ctx := context.Background()
	a, _ := twoHosts(t)
	if _, _, err := a.Files().AddRoot(ctx, RootSpec{Path: "/srv/photos"}, false); err != nil {
		t.Fatal(err)
	}
	second := Host{Name: "toolbox", MachineID: hostA.MachineID}
	for _, ro := range []bool{false, true} {
		o, err := Open(ctx, Options{Path: a.Path(), Host: second, ReadOnly: ro})
		if err == nil {
			o.Close()
		}
		if !errors.Is(err, ErrMachineHasHost) || !strings.Contains(err.Error(), "dupefs host rename "+hostA.Name) {
			t.Fatalf("machine %s as %s (read-only %v): %v, want ErrMachineHasHost naming how to rename %s",
				hostA.MachineID, second.Name, ro, err, hostA.Name)
		}
	}
	if err := a.Files().RenameHost(ctx, hostA.Name, second.Name); err != nil {
		t.Fatal(err)
	}
	openAs(t, a, second)
}

// A host that works now is not gone: forgetting it while it holds a
// lease (an action under way here) is refused, and leaves its roots and
// plans as they were; once its run has ended it may be forgotten.
func TestForgetHostRefusesALiveHost(t *testing.T) {
	ctx := context.Background()
	a, b := twoHosts(t)
	first := plan(t, a, ledgerFixture(t, a))
	act := claim(t, a, first.ID, "wa")
	err := b.Files().ForgetHost(ctx, hostA.Name, true)
	if !errors.Is(err, ErrHostAlive) {
		t.Fatalf("forget a while its action is under way: %v, want ErrHostAlive", err)
	}
	if all, err := b.Files().AllRoots(ctx); err != nil || len(all) != 1 {
		t.Fatalf("a's roots after a refused forget: %+v (%v)", all, err)
	}
	end(t, a, act, ActSkipped)
	if err := b.Files().ForgetHost(ctx, hostA.Name, true); err != nil {
		t.Fatalf("forget a once its run ended: %v", err)
	}
}

// Two hosts' first indexes at once are one bulk load, whose end compares
// device and inode numbers within a host only, as a write's recount
// does: a size two hosts' files share under the same numbers is read, a
// content they both hold is a group of two inodes, and a sum the ending
// host read is recorded in its own files only.
func TestBulkLoadOfTwoHostsTellsTheirInodesApart(t *testing.T) {
	ctx := context.Background()
	a, b, ra, rb := twoHostRoots(t)
	if err := a.Write(ctx, func(tx *Tx) error {
		on, err := tx.StartBulkLoad()
		if err == nil && !on {
			t.Fatal("no bulk load on an empty index")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	pending := FileStat{Name: "p", Size: 77, MtimeNS: 1, Dev: 1, Ino: 9, Nlink: 1}
	done := FileStat{Name: "d", Size: 10, MtimeNS: 1, Dev: 1, Ino: 5, Nlink: 1, Hash: &FileHash{Status: HashDone, Content: sum(1)}}
	partial := FileStat{Name: "h", Size: 20000, MtimeNS: 1, Dev: 1, Ino: 7, Nlink: 1,
		Hash: &FileHash{Status: HashPartial, Prefix: sql.NullInt64{Int64: 3, Valid: true}}}
	fa := addFiles(t, a, ra.ID, "/srv", pending, done, partial)
	fb := addFiles(t, b, rb.ID, "/home", pending, done, partial)
	known := func() []KnownHash { // what a's early reads made of its own h
		return []KnownHash{{Size: 20000, MtimeNS: 1, Dev: 1, Ino: 7, Sum: sum(5)}}
	}
	if err := a.Write(ctx, func(tx *Tx) error { return tx.EndBulkLoadWith(known) }); err != nil {
		t.Fatal(err)
	}
	status := func(db *DB, folder int64, name string) (st string, hash []byte) {
		t.Helper()
		if err := db.r.QueryRow("SELECT hash_status, content_hash FROM files WHERE folder_id = ? AND name = ?",
			folder, name).Scan(&st, &hash); err != nil {
			t.Fatal(err)
		}
		return st, hash
	}
	for _, f := range []int64{fa, fb} {
		if st, _ := status(a, f, "p"); st != HashPending {
			t.Errorf("a file of a size two hosts share under one inode number: %s, want pending", st)
		}
	}
	if g, err := a.Files().GroupByKey(ctx, "sha256", sum(1)); err != nil || g.FileCount != 2 || g.InodeCount != 2 {
		t.Errorf("a content of two hosts under one inode number: %+v (%v), want 2 files, 2 inodes", g, err)
	}
	if st, h := status(a, fa, "h"); st != HashDone || !bytes.Equal(h, sum(5)) {
		t.Errorf("a's file read by a's early reads: %s %x, want done with its sum", st, h)
	}
	if st, h := status(a, fb, "h"); st != HashPartial || h != nil {
		t.Errorf("b's file of a's numbers, never read: %s %x, want partial without a sum", st, h)
	}
}
