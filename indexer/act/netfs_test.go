package act

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/integration/passfs"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// passedThrough is an index of a root whose folder share passes the folder
// local through (as a local NFS export mounted back would): share/a and
// local/a are one file under two paths. The root takes network file
// systems in, so the index holds all four paths.
func passedThrough(t *testing.T) (fx *fixture, data []byte) {
	fx = newFixture(t, t.TempDir())
	data = random(7, 20000)
	fx.write("local/a", data)
	fx.write("local/b", data)
	passfs.Mount(t, filepath.Join(fx.root, "local"), filepath.Join(fx.root, "share"))
	ctx := context.Background()
	if _, _, err := fx.db.Files().AddRoot(ctx, store.RootSpec{Path: fx.root, Network: true}, false); err != nil {
		t.Fatal(err)
	}
	if err := indexer.New(indexer.IndexOf(fx.db), indexer.Config{Workers: 2}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"local/a", "local/b", "share/a", "share/b"} {
		if f, err := fx.db.Files().FileByPath(ctx, filepath.Join(fx.root, rel)); err != nil || f.Hash == nil {
			t.Fatalf("%s not indexed with its hash: %v", rel, err)
		}
	}
	return fx, data
}

// A plan neither keeps nor acts on a file on a network file system: the
// group of four paths is a group of two local files for it.
func TestPlanLeavesNetworkFiles(t *testing.T) {
	fx, _ := passedThrough(t)
	ctx := context.Background()
	roots, _ := fx.db.Files().Roots(ctx)
	for _, op := range []string{store.OpUnlink, store.OpTrash, store.OpLink} {
		specs, notes, err := Plan(ctx, GroupsOf(fx.db), Selection{Op: op, Keep: KeepShortestPath}, roots)
		if err != nil {
			t.Fatal(err)
		}
		if len(specs) != 1 {
			t.Fatalf("%s: %d actions planned, want the one between the two local files: %+v", op, len(specs), specs)
		}
		for _, p := range []string{specs[0].Copy.Path, specs[0].Keep.Path} {
			if !naming.Within(filepath.Join(fx.root, "local"), p) {
				t.Errorf("%s planned on %s", op, p)
			}
		}
		said := 0
		for _, n := range notes {
			if strings.Contains(n.Reason, "network file system ("+passfs.FSType+")") {
				said++
			}
		}
		if said != 2 {
			t.Errorf("%s: the notes say %d network files, want 2: %+v", op, said, notes)
		}
	}
}

// An action that names a file on a network file system — planned by an
// older build, or the mount came since — is skipped when it runs, as copy
// or as kept file, and both files stay as they were.
func TestRunSkipsNetworkFiles(t *testing.T) {
	fx, data := passedThrough(t)
	ctx := context.Background()
	file := func(rel string) store.FileRef {
		f, err := fx.db.Files().FileByPath(ctx, filepath.Join(fx.root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return ref(f.GroupFile)
	}
	f, _ := fx.db.Files().FileByPath(ctx, filepath.Join(fx.root, "local/a"))
	for _, pair := range [][2]string{{"share/a", "local/b"}, {"local/a", "share/b"}, {"local/b", "share/a"}} {
		for _, op := range []string{store.OpUnlink, store.OpTrash} {
			r := fx.runner(Config{HomeTrash: filepath.Join(t.TempDir(), "Trash")})
			spec := store.ActionSpec{Unit: naming.GroupKey(f.Algo, f.Hash), Op: op, Algo: f.Algo, Hash: f.Hash,
				Size: f.Size, Copy: file(pair[0]), Keep: file(pair[1])}
			res, err := fx.db.Ledger().CreatePlan(ctx, store.PlanSpec{Op: op, Worker: r.Owner(), LeaseTTL: store.DefaultLeaseTTL,
				UID: os.Getuid()}, []store.ActionSpec{spec})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Run(ctx, res.ID); err != nil {
				t.Fatal(err)
			}
			as, _ := fx.db.Ledger().Actions(ctx, store.ActionQuery{PlanID: res.ID})
			if len(as) != 1 || as[0].State != store.ActSkipped || !strings.Contains(as[0].Reason, "network file system") {
				t.Errorf("%s of %s keeping %s: %+v", op, pair[0], pair[1], as)
			}
			for _, rel := range []string{"local/a", "local/b"} {
				if b, err := os.ReadFile(filepath.Join(fx.root, rel)); err != nil || !bytes.Equal(b, data) {
					t.Fatalf("%s of %s keeping %s: %s lost its bytes: %v", op, pair[0], pair[1], rel, err)
				}
			}
		}
	}
}

// One file, and a mount that passes its folder through and caches what
// it saw (as NFS does): a "group" of two paths that are one file. Acted on
// with the mount's path preferred, the one copy keeps its bytes. (Without
// the rule, unlinking local/a "keeping share/a" passes every check: the
// cache still shows share/a as it was, and the only copy is gone.)
func TestNeverTheLastCopyThroughAPassThroughMount(t *testing.T) {
	for _, op := range []string{store.OpUnlink, store.OpTrash, store.OpSymlink} {
		t.Run(op, func(t *testing.T) {
			fx := newFixture(t, t.TempDir())
			data := random(8, 20000)
			fx.write("local/a", data)
			share := filepath.Join(fx.root, "share")
			passfs.Mount(t, filepath.Join(fx.root, "local"), share)
			ctx := context.Background()
			if _, _, err := fx.db.Files().AddRoot(ctx, store.RootSpec{Path: fx.root, Network: true}, false); err != nil {
				t.Fatal(err)
			}
			if err := indexer.New(indexer.IndexOf(fx.db), indexer.Config{Workers: 2}).Run(ctx); err != nil {
				t.Fatal(err)
			}
			fx.act(Selection{Op: op, Prefer: []string{share}}, Config{HomeTrash: filepath.Join(t.TempDir(), "Trash")})
			if b, err := os.ReadFile(filepath.Join(fx.root, "local/a")); err != nil || !bytes.Equal(b, data) {
				t.Errorf("after %s, the one copy lost its bytes: %v", op, err)
			}
			checkRoles(t, fx.db)
		})
	}
}

// An action a run left prepared, its copy renamed aside, with its kept
// file on a network file system (a plan of an older build, whose run died
// there): the next command's reconcile puts the copy back rather than
// removing it, however the mount's cache shows the kept file as it was.
func TestReconcileNeverEndsOnANetworkKeep(t *testing.T) {
	fx, data := passedThrough(t)
	ctx := context.Background()
	copyF, err := fx.db.Files().FileByPath(ctx, filepath.Join(fx.root, "local/a"))
	if err != nil {
		t.Fatal(err)
	}
	keepF, err := fx.db.Files().FileByPath(ctx, filepath.Join(fx.root, "share/a"))
	if err != nil {
		t.Fatal(err)
	}
	var keepSt unix.Stat_t
	if err := unix.Stat(keepF.Path, &keepSt); err != nil {
		t.Fatal(err)
	}
	spec := store.ActionSpec{Unit: naming.GroupKey(copyF.Algo, copyF.Hash), Op: store.OpUnlink, Algo: copyF.Algo,
		Hash: copyF.Hash, Size: copyF.Size, Copy: ref(copyF.GroupFile), Keep: ref(keepF.GroupFile)}
	res, err := fx.db.Ledger().CreatePlan(ctx, store.PlanSpec{Op: store.OpUnlink, Worker: "dead/1",
		LeaseTTL: store.DefaultLeaseTTL, UID: os.Getuid()}, []store.ActionSpec{spec})
	if err != nil {
		t.Fatal(err)
	}
	// What the dead run did: claimed and armed the action, renamed the
	// copy aside; then it died before its last check.
	as, err := fx.db.Ledger().ClaimActions(ctx, res.ID, "dead/1", store.DefaultLeaseTTL, 1)
	if err != nil || len(as) != 1 {
		t.Fatalf("claimed %d: %v", len(as), err)
	}
	a := as[0]
	if err := fx.db.Write(ctx, func(tx *store.Tx) error {
		return tx.ArmAction(a.Lease, store.UndoInfo{Mode: 0o644, KeepCtimeNS: keepSt.Ctim.Nano()})
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(copyF.Path, filepath.Join(filepath.Dir(copyF.Path), tmpName(&a))); err != nil {
		t.Fatal(err)
	}
	next := fx.runner(Config{HomeTrash: filepath.Join(t.TempDir(), "Trash"), Dead: func(w string) bool { return w == "dead/1" }})
	if _, err := next.Reconcile(ctx, 0, false); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(copyF.Path); err != nil || !bytes.Equal(b, data) {
		t.Errorf("the copy is not back at its path: %v", err)
	}
	all, _ := fx.db.Ledger().Actions(ctx, store.ActionQuery{PlanID: res.ID})
	if len(all) != 1 || all[0].State == store.ActDone {
		t.Errorf("the action: %+v", all)
	}
}
