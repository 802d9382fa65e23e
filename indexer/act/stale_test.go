package act

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/store"
)

// A copy rewritten in place with its size and mtime set back is what the
// index recorded (size, mtime, device, inode): a scan keeps its hash, and
// only an action's compare of the bytes finds it changed. The action is
// skipped, and the two files are read again at the next index, which no
// longer counts them a group (it kept the stale hash for good, though the
// skip said to run dupefs index).
func TestBytesFoundChangedAreReadAgain(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	_, copies, _ := threeCopies(fx, 100000)
	fx.index()
	var st os.FileInfo
	st, err := os.Stat(copies[0])
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(copies[0], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(random(9, 100000), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(copies[0], st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	fx.index()
	if g := fx.groups(); g != 1 {
		t.Fatalf("%d groups before the action, want the stale one", g)
	}
	id, _ := fx.act(Selection{Op: store.OpLink}, Config{Progress: &Progress{}})
	as, err := fx.db.Ledger().Actions(context.Background(), store.ActionQuery{PlanID: id})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if a.Copy.Path == copies[0] && (a.State != store.ActSkipped || !strings.Contains(a.Reason, "bytes differ")) {
			t.Fatalf("the link of the rewritten copy: %s %q", a.State, a.Reason)
		}
	}
	fx.index()
	// The kept file and the other copy are one inode now: no group left.
	if g := fx.groups(); g != 0 {
		t.Fatalf("%d groups after the next index, want none: the rewritten copy kept its stale hash", g)
	}
}
