package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// openAs opens the index of db again as host h.
func openAs(tb testing.TB, db *DB, h Host) *DB {
	tb.Helper()
	o, err := Open(context.Background(), Options{Path: db.Path(), Host: h})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { o.Close() })
	return o
}

// hostsByName lists the hosts of db's index (the one openTest registered
// among them).
func hostsByName(tb testing.TB, db *DB) map[string]HostInfo {
	tb.Helper()
	hs, err := db.Files().Hosts(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]HostInfo{}
	for _, h := range hs {
		out[h.Name] = h
	}
	return out
}

// hostA and hostB are two machines.
var (
	hostA = Host{Name: "nas", MachineID: "m-nas"}
	hostB = Host{Name: "laptop", MachineID: "m-laptop"}
)

// On PostgreSQL a host name registered by one machine is refused to
// another until it is renamed; on SQLite the one host is whoever opens
// the index, and its roots stay its own.
func TestHostNameOfAnotherMachineIsRefused(t *testing.T) {
	ctx := context.Background()
	a := openAs(t, openTest(t), hostA)
	if _, _, err := a.Files().AddRoot(ctx, RootSpec{Path: "/srv/photos"}, false); err != nil {
		t.Fatal(err)
	}
	impostor := Host{Name: hostA.Name, MachineID: "m-other"}
	o, err := Open(ctx, Options{Path: a.Path(), Host: impostor})
	if !onPostgresTest(t) {
		if err != nil {
			t.Fatalf("SQLite: opening as another machine: %v, want the one host taken over", err)
		}
		defer o.Close()
		roots, err := o.Files().Roots(ctx)
		if err != nil || len(roots) != 1 {
			t.Fatalf("SQLite: the one host's roots after a new machine opened it: %+v, %v", roots, err)
		}
		return
	}
	if !errors.Is(err, ErrHostClash) {
		o.Close()
		t.Fatalf("opening as %+v beside %+v: %v, want ErrHostClash", impostor, hostA, err)
	}
	if _, err := Open(ctx, Options{Path: a.Path(), Host: impostor, ReadOnly: true}); !errors.Is(err, ErrHostClash) {
		t.Fatalf("reading as %+v: %v, want ErrHostClash", impostor, err)
	}
	// Resolved by renaming the registered one.
	if err := a.Files().RenameHost(ctx, hostA.Name, "nas-old"); err != nil {
		t.Fatal(err)
	}
	o = openAs(t, a, impostor)
	hs := hostsByName(t, o)
	if len(hs) != 3 || hs["nas"].MachineID != impostor.MachineID || hs["nas"].Roots != 0 ||
		hs["nas-old"].MachineID != hostA.MachineID || hs["nas-old"].Roots != 1 {
		t.Fatalf("hosts after the rename: %+v", hs)
	}
}

// A root belongs to its host: each host lists its own, a path another
// host holds is another disk's and may be a root here too, and every
// host's roots are listed with their host.
func TestRootsBelongToTheirHost(t *testing.T) {
	ctx := context.Background()
	a, b := twoHosts(t)
	if _, _, err := a.Files().AddRoot(ctx, RootSpec{Path: "/srv/photos"}, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Files().AddRoot(ctx, RootSpec{Path: "/home/u/Pictures"}, false); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/srv/photos/2019", "/srv/photos"} {
		r, outcome, err := b.Files().AddRoot(ctx, RootSpec{Path: p}, false)
		if err != nil || outcome != RootAdded || r.Host != hostB.Name {
			t.Fatalf("host b adds %s beside a's /srv/photos: %+v, %v, %v; want a root of its own", p, r, outcome, err)
		}
		if err := b.Files().RemoveRoot(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
	}
	mine, err := b.Files().Roots(ctx)
	if err != nil || len(mine) != 1 || mine[0].Path != "/home/u/Pictures" || mine[0].Host != hostB.Name {
		t.Fatalf("b's roots: %+v, %v", mine, err)
	}
	if _, err := b.Files().RootByPath(ctx, "/srv/photos"); !errors.Is(err, ErrNotFound) {
		t.Errorf("b finds a's root by path: %v", err)
	}
	all, err := b.Files().AllRoots(ctx)
	if err != nil || len(all) != 2 || all[0].Host != hostB.Name || all[1].Host != hostA.Name {
		t.Fatalf("every root: %+v, %v", all, err)
	}
}

// A host claims only its own jobs, and each host has its own active hash
// job.
func TestHostsClaimTheirOwnJobs(t *testing.T) {
	ctx := context.Background()
	a, b := twoHosts(t)
	ra, _, err := a.Files().AddRoot(ctx, RootSpec{Path: "/srv/photos"}, false)
	if err != nil {
		t.Fatal(err)
	}
	scan, _, err := a.Jobs().Enqueue(ctx, KindScan, ra.ID)
	if err != nil {
		t.Fatal(err)
	}
	ha, createdA, err := a.Jobs().Enqueue(ctx, KindHash, 0)
	if err != nil {
		t.Fatal(err)
	}
	hb, createdB, err := b.Jobs().Enqueue(ctx, KindHash, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !createdA || !createdB || ha == hb {
		t.Fatalf("hash jobs of two hosts: %d (%v) and %d (%v), want one each", ha, createdA, hb, createdB)
	}
	if again, created, err := b.Jobs().Enqueue(ctx, KindHash, 0); err != nil || created || again != hb {
		t.Fatalf("b's second hash job: %d %v %v, want its first, %d", again, created, err, hb)
	}
	if _, _, err := b.Jobs().Claim(ctx, KindScan, "b", DefaultLeaseTTL); !errors.Is(err, ErrNotFound) {
		t.Fatalf("b claims a scan of a's root: %v", err)
	}
	j, _, err := b.Jobs().Claim(ctx, KindHash, "b", DefaultLeaseTTL)
	if err != nil || j.ID != hb || j.HostID != b.Host().ID {
		t.Fatalf("b claims %+v, %v; want its own hash job %d", j, err, hb)
	}
	j, _, err = a.Jobs().Claim(ctx, KindScan, "a", DefaultLeaseTTL)
	if err != nil || j.ID != scan {
		t.Fatalf("a claims %+v, %v; want its scan %d", j, err, scan)
	}
}

// A host with roots is forgotten only with them; the host a process works
// as is never forgotten by it.
func TestForgetHost(t *testing.T) {
	ctx := context.Background()
	a, b := twoHosts(t)
	if _, _, err := a.Files().AddRoot(ctx, RootSpec{Path: "/srv/photos"}, false); err != nil {
		t.Fatal(err)
	}
	if err := b.Files().ForgetHost(ctx, hostB.Name, true); err == nil {
		t.Fatal("b forgot itself")
	}
	if err := b.Files().ForgetHost(ctx, hostA.Name, false); !errors.Is(err, ErrHostHasRoots) {
		t.Fatalf("forget a with its roots: %v, want ErrHostHasRoots", err)
	}
	if err := b.Files().ForgetHost(ctx, hostA.Name, true); err != nil {
		t.Fatal(err)
	}
	all, err := b.Files().AllRoots(ctx)
	hs := hostsByName(t, b)
	if _, ok := hs[hostA.Name]; err != nil || len(all) != 0 || ok {
		t.Fatalf("after forgetting a: roots %+v (%v), hosts %+v", all, err, hs)
	}
	if err := b.Files().ForgetHost(ctx, hostA.Name, true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("forget a again: %v, want ErrNotFound", err)
	}
}

// An index of the release before hosts: its roots, jobs and plans belong
// to the one host, which the first process to open it names; the schema
// is a fresh one's.
func TestOpenIndexOfRelease0013GivesItsRootsToTheHost(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "index.db")
	oldIndex(t, path, 13,
		"INSERT INTO roots (path, created_at) VALUES ('/home/u', 1), ('/srv/backup', 2)",
		"INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('hash', 'pending', 1, 1)",
		"INSERT INTO jobs (kind, root_id, status, created_at, updated_at) VALUES ('scan', 1, 'pending', 1, 1)")
	db, err := Open(ctx, Options{Path: path, Host: hostA})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if h := db.Host(); h.ID != 1 || h.Name != hostA.Name {
		t.Fatalf("host %+v, want row 1 named %s", h, hostA.Name)
	}
	roots, err := db.Files().Roots(ctx)
	if err != nil || len(roots) != 2 || roots[0].Host != hostA.Name || roots[1].Host != hostA.Name {
		t.Fatalf("roots: %+v, %v", roots, err)
	}
	for _, kind := range []string{KindHash, KindScan} {
		if _, _, err := db.Jobs().Claim(ctx, kind, "w", DefaultLeaseTTL); err != nil {
			t.Errorf("claim the old %s job: %v", kind, err)
		}
	}
	if _, created, err := db.Jobs().Enqueue(ctx, KindHash, 0); err != nil || created {
		t.Errorf("a second hash job beside the old one: created %v, %v", created, err)
	}
	db.Close()
	if got, want := schemaOf(t, path), freshSchema(t); got != want {
		t.Errorf("schema after the upgrade:\n%s\nwant:\n%s", got, want)
	}
}

// The rule that no content loses its last copy holds across hosts: a
// file one host's live plan keeps is never acted on by another's plan (a
// host acts on its own files only), and each host lists its own plans.
func TestKeepersHoldAcrossHosts(t *testing.T) {
	ctx := context.Background()
	base := openTest(t)
	a := openAs(t, base, hostA)
	spec := ledgerFixture(t, a)
	b := openAs(t, base, hostB)
	first := plan(t, a, spec)
	crossed := spec
	crossed.Copy, crossed.Keep = spec.Keep, spec.Copy
	res, err := b.Ledger().CreatePlan(ctx, PlanSpec{Op: OpLink, Worker: "wb", LeaseTTL: time.Minute}, []ActionSpec{crossed})
	if err != nil {
		t.Fatal(err)
	}
	why := fmt.Sprintf("plan %d", first.ID) // SQLite: one host, whose plan keeps the file
	if onPostgresTest(t) {
		why = "a file of host " + hostA.Name
	}
	if first.Actions != 1 || res.Actions != 0 || len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Reason, why) {
		t.Fatalf("a's plan %+v, then b's crossed plan %+v: want b's refused, saying %q", first, res, why)
	}
	want := 1 // each host's own (b's recorded nothing)
	if !onPostgresTest(t) {
		want = 2 // SQLite: one host, whoever opens it
	}
	mine, err := a.Ledger().Plans(ctx, 0, 0)
	if err != nil || len(mine) != want {
		t.Fatalf("a's plans: %+v, %v; want %d", mine, err, want)
	}
	theirs, err := b.Ledger().Plans(ctx, 0, 0)
	if err != nil || len(theirs) != want {
		t.Fatalf("b's plans: %+v, %v; want %d", theirs, err, want)
	}
	if onPostgresTest(t) {
		if got, err := b.Ledger().Plans(ctx, first.ID, 1); err != nil || len(got) != 0 {
			t.Fatalf("b reads a's plan %d: %+v, %v", first.ID, got, err)
		}
	}
}

// Device and inode numbers are compared within one host only: a file of
// one host and a file of another with the same numbers (two machines
// cloned from one image) are two inodes, so a content they both hold is a
// group and a size they share is read.
func TestInodeNumbersOfTwoHostsAreTwoInodes(t *testing.T) {
	ctx := context.Background()
	a, b, ra, rb := twoHostRoots(t)
	var err error
	same := func(name string) FileStat {
		return FileStat{Name: name, Size: 10, Dev: 1, Ino: 5, Nlink: 1, Hash: &FileHash{Status: HashDone, Content: sum(1)}}
	}
	addFiles(t, a, ra.ID, "/srv", same("x"))
	addFiles(t, b, rb.ID, "/home", same("x"))
	var links int
	err = b.Files().Report(ctx, GroupQuery{MinSize: 1}, nil, func(g Group, files []GroupFile) error {
		for _, f := range files {
			if f.HardLink {
				links++
			}
		}
		return nil
	})
	if g := groupKeys(t, b, GroupQuery{MinSize: 1}); err != nil || len(g) != 1 || links != 0 {
		t.Fatalf("one content on two hosts with the same device and inode numbers: groups %v (%v), %d called hard links; want one group of two copies", g, err, links)
	}
	pending := func(name string) FileStat { return FileStat{Name: name, Size: 77, Dev: 1, Ino: 9, Nlink: 1} }
	addFiles(t, a, ra.ID, "/srv/p", pending("y"))
	addFiles(t, b, rb.ID, "/home/p", pending("y"))
	plan := planFenced(t, b)
	if !slices.Contains(plan, SizeCount{Size: 77, Files: 2}) {
		t.Fatalf("plan %+v, want the size two hosts' files share, with both files", plan)
	}
}

// A file one host hashed in part, whose prefix a file of another host
// turned out to share after the first host's run, is the first host's to
// hash whole: its queue says so and its plan takes the size in, though no
// scan changed that size since.
func TestHalfHashedFilesAnotherHostMatchedAreOwed(t *testing.T) {
	ctx := context.Background()
	a, b, ra, rb := twoHostRoots(t)
	const size = 1 << 20
	partial := FileStat{Name: "x", Size: size, Dev: 1, Ino: 5, Nlink: 1,
		Hash: &FileHash{Status: HashPartial, Prefix: sql.NullInt64{Int64: 42, Valid: true}}}
	addFiles(t, a, ra.ID, "/srv", partial)
	planFenced(t, a) // a's run: its file alone, its size forgotten once planned
	if owed, err := a.Jobs().AnyQueued(ctx); err != nil || owed {
		t.Fatalf("a's queue with its half-hashed file alone: %v %v", owed, err)
	}
	done := partial
	done.Ino, done.Hash = 6, &FileHash{Status: HashDone, Prefix: partial.Hash.Prefix, Content: sum(3)}
	addFiles(t, b, rb.ID, "/home", done)
	planFenced(t, b) // b's run plans the size, and forgets it
	if owed, err := a.Jobs().AnyQueued(ctx); err != nil || !owed {
		t.Fatalf("a's queue once b's file shares its prefix: %v %v, want its file owed", owed, err)
	}
	// Status says so, on either host, and names the host that owes it.
	for _, r := range []Root{ra, rb} {
		if err := a.Write(ctx, func(tx *Tx) error { return tx.FinishRootScan(r.ID, RootStats{Files: 1}) }); err != nil {
			t.Fatal(err)
		}
	}
	for _, db := range []*DB{a, b} {
		tot, err := db.Totals(ctx)
		if err != nil || tot.Queued != 1 || tot.State == StateUpToDate {
			t.Fatalf("totals once b's file shares the prefix of a's: queued %d, %q (%v); want 1 queued, not up to date",
				tot.Queued, tot.State, err)
		}
		if hs := hostsByName(t, db); hs[hostA.Name].Queued != 1 || hs[hostB.Name].Queued != 0 {
			t.Fatalf("hosts' queues: %+v, want a's file queued on a alone", hs)
		}
	}
	if plan := planFenced(t, a); !slices.ContainsFunc(plan, func(s SizeCount) bool { return s.Size == size }) {
		t.Fatalf("a's plan %+v lacks the size of its half-hashed file", plan)
	}
}

// twoHosts opens one PostgreSQL index as hostA and as hostB (SQLite has
// one host: the test is skipped there).
func twoHosts(t *testing.T) (a, b *DB) {
	t.Helper()
	if !onPostgresTest(t) {
		t.Skip("SQLite has one host")
	}
	base := openTest(t)
	return openAs(t, base, hostA), openAs(t, base, hostB)
}

// twoHostRoots is twoHosts with a root each: /srv on a, /home on b.
func twoHostRoots(t *testing.T) (a, b *DB, ra, rb Root) {
	t.Helper()
	a, b = twoHosts(t)
	ctx := context.Background()
	var err error
	if ra, _, err = a.Files().AddRoot(ctx, RootSpec{Path: "/srv"}, false); err != nil {
		t.Fatal(err)
	}
	if rb, _, err = b.Files().AddRoot(ctx, RootSpec{Path: "/home"}, false); err != nil {
		t.Fatal(err)
	}
	return a, b, ra, rb
}
