package act

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/integration/loopfs"
	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/store"
)

// A run killed at each step of an action leaves it as it stood; the next
// command first reconciles what it left from what the disk shows (the
// action under way completed or taken back, the rest abandoned), then its
// own plan does the rest: each copy is acted on exactly once, by one plan
// or the other, and no temporary file is left.
func TestEveryStepIsHealedByTheNextRun(t *testing.T) {
	for _, op := range []string{store.OpLink, store.OpSymlink, store.OpTrash, store.OpUnlink, store.OpDedupe} {
		for _, step := range []string{"armed", "moved", "finished"} {
			if op == store.OpDedupe && step == "finished" {
				continue // dedupe's moved is its end
			}
			t.Run(op+" "+step, func(t *testing.T) {
				root := t.TempDir()
				if op == store.OpDedupe {
					root = filepath.Join(loopfs.Mount(t, "btrfs", 0), "tree")
				}
				fx := newFixture(t, root)
				keep, copies, data := threeCopies(fx, 70000)
				fx.index()
				ctx := context.Background()
				id, _ := fx.plan(Selection{Op: op}, "dead/1")
				home := filepath.Join(t.TempDir(), "Trash")
				// The first run dies right after step, on the first copy:
				// its goroutine ends there, as a killed process would,
				// writing nothing more.
				r := fx.runner(Config{Owner: "dead/1", HomeTrash: home,
					Hook: func(s, _ string) {
						if s == step {
							runtime.Goexit()
						}
					}})
				died := make(chan struct{})
				go func() {
					defer close(died)
					r.Run(ctx, id)
				}()
				testenv.Recv(t, died, time.Minute, "the run that dies after "+step)
				as, _ := fx.db.Ledger().Actions(ctx, store.ActionQuery{PlanID: id, State: store.ActPrepared})
				if len(as) != 1 {
					t.Fatalf("%d actions left prepared, want 1", len(as))
				}
				// The next command: its worker is known to be dead.
				next := fx.runner(Config{HomeTrash: home, Dead: func(w string) bool { return w == "dead/1" }})
				rep, err := next.Reconcile(ctx, 0, false)
				if err != nil {
					t.Fatal(err)
				}
				want := store.ActDone
				if step == "armed" || op == store.OpDedupe {
					// Not begun; or, for dedupe, the disk cannot tell (and
					// sharing extents again is harmless).
					want = store.ActAbandoned
				}
				if got := rep.Settled[0].State; got != want {
					t.Errorf("the action under way ended %s (%s), want %s", got, rep.Settled[0].Note, want)
				}
				id2, _ := fx.plan(Selection{Op: op}, next.Owner())
				if err := next.Run(ctx, id2); err != nil {
					t.Fatal(err)
				}
				done := 0
				for _, plan := range []int64{id, id2} {
					all, _ := fx.db.Ledger().Actions(ctx, store.ActionQuery{PlanID: plan})
					for _, a := range all {
						switch a.State {
						case store.ActDone:
							done++
						case store.ActAbandoned:
						default:
							t.Errorf("plan %d: action on %q: %s %q", plan, a.Copy.Path, a.State, a.Reason)
						}
					}
				}
				if done != len(copies) {
					t.Errorf("%d actions done, want one per copy (%d)", done, len(copies))
				}
				leftovers(t, root)
				checkAfter(t, op, keep, copies, data, home)
				checkRoles(t, fx.db)
			})
		}
	}
}

// checkRoles fails when the roles the index records are not those its
// live actions hold.
func checkRoles(t *testing.T, db *store.DB) {
	t.Helper()
	ms, err := db.Ledger().CheckRoles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		t.Errorf("roles of %q: recorded %q, actions hold %q", m.Path, m.Recorded, m.Actual)
	}
}

// checkAfter checks the copies after op completed on them.
func checkAfter(t *testing.T, op, keep string, copies []string, data []byte, home string) {
	t.Helper()
	k := stat(t, keep)
	for _, c := range copies {
		var st unix.Stat_t
		err := unix.Lstat(c, &st)
		switch op {
		case store.OpLink:
			if err != nil || st.Ino != k.Ino {
				t.Errorf("%q is not a hard link of the kept file: %v", c, err)
			}
		case store.OpSymlink:
			target, _ := os.Readlink(c)
			if target != keep {
				t.Errorf("%q -> %q, want %q", c, target, keep)
			}
		case store.OpTrash, store.OpUnlink:
			if err == nil {
				t.Errorf("%q is still there", c)
			}
		case store.OpDedupe:
			if b, _ := os.ReadFile(c); !bytes.Equal(b, data) || firstExtent(t, c) != firstExtent(t, keep) {
				t.Errorf("%q not deduplicated", c)
			}
		}
	}
	if op == store.OpTrash {
		files, _ := filepath.Glob(filepath.Join(home, "files", "*"))
		infos, _ := filepath.Glob(filepath.Join(home, "info", "*"))
		if len(files) != len(copies) || len(infos) != len(copies) {
			t.Errorf("the Trash holds %d files and %d .trashinfo, want %d of each", len(files), len(infos), len(copies))
		}
		for _, f := range files {
			if b, _ := os.ReadFile(f); !bytes.Equal(b, data) {
				t.Errorf("%q in the Trash lost its bytes", f)
			}
		}
	}
}

// Names with a newline, bytes that are not UTF-8, 255 bytes and a leading
// dash are acted on like any other.
func TestOddNames(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	data := random(5, 50000)
	long := strings.Repeat("é", 127) + "x" // 255 bytes
	fx.write("keep", data)
	names := []string{"new\nline", "bad\xff\xfe", long, "-leading-dash", "back\\slash"}
	for _, n := range names {
		fx.write("o/"+n, data)
	}
	fx.index()
	home := filepath.Join(t.TempDir(), "Trash")
	id, p := fx.act(Selection{Op: store.OpTrash, Keep: KeepShortestPath}, Config{HomeTrash: home, Progress: &Progress{}})
	if p.Done.Load() != int64(len(names)) {
		as, _ := fx.db.Ledger().Actions(context.Background(), store.ActionQuery{PlanID: id})
		t.Fatalf("done %d of %d: %+v", p.Done.Load(), len(names), as)
	}
	rep, err := fx.runner(Config{Owner: "t", HomeTrash: home}).Undo(context.Background(), id)
	if err != nil || rep.Reverted != len(names) {
		t.Fatalf("undo: %+v %v", rep, err)
	}
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(fx.root, "o", n)); err != nil || !bytes.Equal(b, data) {
			t.Errorf("%q after undo: %v", n, err)
		}
	}
}

// An undo never writes over a path that was taken again.
func TestUndoNeverOverwrites(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	_, copies, _ := threeCopies(fx, 40000)
	fx.index()
	home := filepath.Join(t.TempDir(), "Trash")
	id, _ := fx.act(Selection{Op: store.OpTrash}, Config{HomeTrash: home, Progress: &Progress{}})
	mine := []byte("a new file at the same path")
	os.WriteFile(copies[0], mine, 0o644)
	rep, err := fx.runner(Config{Owner: "t", HomeTrash: home}).Undo(context.Background(), id)
	if err != nil || rep.Reverted != 1 || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "taken again") {
		t.Fatalf("undo: %+v %v", rep, err)
	}
	if b, _ := os.ReadFile(copies[0]); !bytes.Equal(b, mine) {
		t.Error("undo wrote over a file that took the path")
	}
}
