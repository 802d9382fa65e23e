package act

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
)

// A kept file that a process holds mapped for writing may change at any
// moment without moving its mtime or ctime (its page was dirtied before,
// so a later write takes no fault): no check of its metadata can see the
// write. dupefs takes a read lease on both files before it compares them,
// which the kernel refuses while a writer holds either open: the action
// is skipped, and the copy — which the edit would have left the only
// holder of the original bytes — stays.
func TestKeptFileEditedThroughAMapping(t *testing.T) {
	for _, op := range []string{store.OpLink, store.OpSymlink, store.OpTrash, store.OpUnlink} {
		for _, step := range []string{"armed", "moved"} {
			t.Run(op+" "+step, func(t *testing.T) {
				fx := newFixture(t, t.TempDir())
				keep, _, data := threeCopies(fx, 30000)
				f, err := os.OpenFile(keep, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				m, err := unix.Mmap(int(f.Fd()), 0, len(data), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
				if err != nil {
					t.Fatal(err)
				}
				defer unix.Munmap(m)
				copy(m[100:101], data[100:101]) // dirty the page now: the fault moves mtime once, before the index
				old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
				os.Chtimes(keep, old, old) // still the oldest: kept
				fx.index()
				edited := false
				id, _ := fx.act(Selection{Op: op}, Config{HomeTrash: t.TempDir() + "/Trash", Hook: func(s, _ string) {
					if s == step && !edited {
						edited = true
						copy(m[100:], "edited") // same size, other bytes; no fault, no timestamp
					}
				}})
				as, _ := fx.db.Ledger().Actions(context.Background(), store.ActionQuery{PlanID: id})
				first := as[0]
				if first.State != store.ActSkipped || !strings.Contains(first.Reason, "open for writing") {
					t.Errorf("an action whose kept file is mapped for writing: %s %q (edited: %v)", first.State, first.Reason, edited)
				}
				b, err := os.ReadFile(first.Copy.Path)
				var st unix.Stat_t
				if err != nil || !bytes.Equal(b, data) || unix.Lstat(first.Copy.Path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
					t.Errorf("kept file edited (through a mapping) at %s: the copy %q lost the original bytes (action %s %q)",
						step, first.Copy.Path, first.State, first.Reason)
				}
			})
		}
	}
}
