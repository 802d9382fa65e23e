package act

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/integration/loopfs"
	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/store"
)

// A kept file edited after its compare — right before the effect, or
// after the copy was moved aside — is seen: the copy stays (or comes back)
// with its bytes, and the action is skipped with the reason. Edited any
// earlier, the checks before the compare skip it too. (Once a link is
// exchanged into the copy's path, an editor waits for it to be made.)
func TestKeptFileEditedAtTheLastMoment(t *testing.T) {
	for _, op := range []string{store.OpLink, store.OpSymlink, store.OpTrash, store.OpUnlink} {
		for _, step := range []string{"checked", "armed", "moved"} {
			t.Run(op+" "+step, func(t *testing.T) {
				fx := newFixture(t, t.TempDir())
				keep, copies, data := threeCopies(fx, 30000)
				fx.index()
				home := filepath.Join(t.TempDir(), "Trash")
				edited := false
				wrote := make(chan struct{})
				id, _ := fx.act(Selection{Op: op}, Config{HomeTrash: home, Hook: func(s, _ string) {
					if s == step && !edited {
						edited = true
						// An editor saves the kept file: its open waits
						// on the action's lease until the action lets go.
						go func() {
							defer close(wrote)
							f, err := os.OpenFile(keep, os.O_WRONLY, 0)
							if err != nil {
								t.Error(err)
								return
							}
							f.WriteAt([]byte("edited"), 100) // same size, other bytes
							f.Close()
						}()
						waitBreaking(t)
					}
				}})
				testenv.Recv(t, wrote, time.Minute, "the editor's write")
				as, _ := fx.db.Ledger().Actions(context.Background(), store.ActionQuery{PlanID: id})
				first := as[0]
				if step == "moved" && (op == store.OpLink || op == store.OpSymlink) {
					// Exchanged already: the copy's path names the kept
					// file, and the editor may have opened it there. The
					// link is made; the edit lands after it, in the file
					// both paths name — never in the kept file alone.
					kb, _ := os.ReadFile(keep)
					cb, _ := os.ReadFile(first.Copy.Path)
					if first.State != store.ActDone || !bytes.Equal(kb, cb) || bytes.Equal(kb, data) {
						t.Errorf("an edit waiting on an exchanged link: %s %q; the copy's path and the kept file differ, or hold no edit",
							first.State, first.Reason)
					}
					leftovers(t, fx.root)
					checkRoles(t, fx.db)
					return
				}
				if first.State != store.ActSkipped ||
					!(strings.Contains(first.Reason, "kept file changed") || strings.Contains(first.Reason, "for writing")) {
					t.Errorf("the action whose kept file was edited: %s %q", first.State, first.Reason)
				}
				if b, err := os.ReadFile(first.Copy.Path); err != nil || !bytes.Equal(b, data) {
					t.Errorf("the copy of a kept file edited at %s lost its bytes: %v", step, err)
				}
				var st unix.Stat_t
				if unix.Lstat(first.Copy.Path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
					t.Errorf("the copy is no regular file any more")
				}
				leftovers(t, fx.root)
				checkRoles(t, fx.db)
				_ = copies
			})
		}
	}
}

// The folder an action changed is synced through the folder it holds
// open: one swapped for another after the effect does not undo the
// record of it.
func TestFolderSwappedAfterTheEffect(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	_, copies, _ := threeCopies(fx, 20000)
	fx.index()
	dir := filepath.Dir(copies[0])
	swapped := false
	id, p := fx.act(Selection{Op: store.OpUnlink}, Config{Hook: func(s, path string) {
		if s == "finished" && !swapped {
			swapped = true
			os.Rename(dir, dir+".moved")
			os.Mkdir(dir, 0o755)
		}
	}})
	if p.Done.Load() != 2 {
		as, _ := fx.db.Ledger().Actions(context.Background(), store.ActionQuery{PlanID: id})
		t.Fatalf("done %d: %+v", p.Done.Load(), as)
	}
}

// A trash can another user could write to is never used: the action
// fails, saying which, and the copy stays.
func TestUntrustedTrashIsRefused(t *testing.T) {
	for _, how := range []string{"mode 0777", "owned by another user"} {
		t.Run(how, func(t *testing.T) {
			mnt := loopfs.Mount(t, "ext4", 0)
			fx := newFixture(t, filepath.Join(mnt, "tree"))
			_, copies, data := threeCopies(fx, 20000)
			fx.index()
			trash := filepath.Join(mnt, ".Trash-"+itoa(int64(os.Getuid())))
			os.Mkdir(trash, 0o700)
			if how == "mode 0777" {
				os.Chmod(trash, 0o777)
			} else {
				os.Chown(trash, 4321, 4321)
			}
			home := filepath.Join(t.TempDir(), "Trash") // another file system
			id, p := fx.act(Selection{Op: store.OpTrash}, Config{HomeTrash: home, Progress: &Progress{}})
			if p.Failed.Load() != 2 {
				t.Fatalf("failed %d, want 2", p.Failed.Load())
			}
			as, _ := fx.db.Ledger().Actions(context.Background(), store.ActionQuery{PlanID: id})
			if !strings.Contains(as[0].Reason, trash) {
				t.Errorf("reason %q does not name %s", as[0].Reason, trash)
			}
			for _, c := range copies {
				if b, _ := os.ReadFile(c); !bytes.Equal(b, data) {
					t.Errorf("%q changed", c)
				}
			}
			checkRoles(t, fx.db)
		})
	}
}

// A FIFO put where a copy was indexed never blocks a run: it is opened
// without waiting, found no regular file, and left alone.
func TestFIFOSwappedInNeverBlocks(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	_, copies, _ := threeCopies(fx, 20000)
	fx.index()
	os.Remove(copies[0])
	if err := syscall.Mkfifo(copies[0], 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fx.act(Selection{Op: store.OpLink}, Config{})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a FIFO at a copy's path blocked the run")
	}
	var st unix.Stat_t
	if unix.Lstat(copies[0], &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Error("the FIFO was touched")
	}
}

// waitBreaking waits until a writer waits on a lease (/proc/locks shows it
// breaking).
func waitBreaking(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, _ := os.ReadFile("/proc/locks"); strings.Contains(string(b), "BREAKING") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no writer waits on the action's lease after 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// An effect whose last step fails (the folder made immutable after the
// copy was moved aside, say) is never recorded done: the action fails and
// says where the copy is, and the copy still holds its bytes.
func TestLastStepFailingIsNotDone(t *testing.T) {
	for _, op := range []string{store.OpLink, store.OpUnlink} {
		t.Run(op, func(t *testing.T) {
			fx := newFixture(t, filepath.Join(loopfs.Mount(t, "ext4", 0), "tree"))
			_, copies, data := threeCopies(fx, 20000)
			fx.index()
			var dir string
			id, _ := fx.act(Selection{Op: op}, Config{Hook: func(s, path string) {
				if s == "moved" && dir == "" {
					dir = filepath.Dir(path)
					if err := setImmutable(dir, true); err != nil {
						t.Fatal(err)
					}
				}
			}})
			defer setImmutable(dir, false)
			as, _ := fx.db.Ledger().Actions(context.Background(), store.ActionQuery{PlanID: id})
			a := as[0]
			if a.State != store.ActFailed || !strings.Contains(a.Reason, tmpName(&a)) {
				t.Fatalf("%s whose last step failed: %s %q", op, a.State, a.Reason)
			}
			if b, err := os.ReadFile(filepath.Join(dir, tmpName(&a))); err != nil || !bytes.Equal(b, data) {
				t.Errorf("the copy is not where the ledger says: %v", err)
			}
			_ = copies
		})
	}
}

// setImmutable sets or clears a folder's immutable flag (chattr +i).
func setImmutable(dir string, on bool) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	const immutable = 0x10
	if on {
		flags |= immutable
	} else {
		flags &^= immutable
	}
	return unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags))
}
