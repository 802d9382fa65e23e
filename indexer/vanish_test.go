package indexer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store"
)

// Files that vanish between the scan and their read are said in one line
// with their number, not a line each.
func TestVanishedFilesSaidOnce(t *testing.T) {
	noEarlyReads(t)
	e := newEnv(t)
	files := map[string]string{}
	copy := big(3, 64<<10) // copies: read whole by the hash job
	for i := 0; i < 40; i++ {
		files[fmt.Sprintf("d%d/f%02d", i%4, i)] = copy
	}
	tree(t, e.dir, files)
	e.addRoot(store.RootSpec{})
	ix := New(IndexOf(e.db), e.config())
	ix.hook = func(stage, path string) {
		if stage == "hash" {
			for i := 0; i < 30; i++ {
				os.Remove(filepath.Join(e.dir, fmt.Sprintf("d%d/f%02d", i%4, i)))
			}
		}
	}
	if err := ix.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	said := 0
	for _, w := range e.warn {
		if strings.Contains(w, e.dir) {
			t.Errorf("a line for one file: %q", w)
		}
		if strings.Contains(w, "30 files vanished while being read") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("the vanished files were said %d times: %q", said, e.warn)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 1811: "1,811", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// Folders that vanish between their parent's listing and their own are
// said in one line per scan.
func TestVanishedFoldersSaidOnce(t *testing.T) {
	e := newEnv(t)
	files := map[string]string{}
	for i := 0; i < 12; i++ {
		files[fmt.Sprintf("d%02d/f", i)] = fmt.Sprint("file ", i)
	}
	tree(t, e.dir, files)
	e.addRoot(store.RootSpec{})
	ix := New(IndexOf(e.db), e.config())
	ix.hook = func(stage, path string) {
		if stage == "list" && path != e.dir && filepath.Base(path) >= "d03" {
			os.RemoveAll(path)
		}
	}
	if err := ix.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	said := 0
	for _, w := range e.warn {
		if strings.Contains(w, "no such file") {
			t.Errorf("a line for one folder: %q", w)
		}
		if strings.Contains(w, "9 folders vanished while being read") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("the vanished folders were said %d times: %q", said, e.warn)
	}
}

// With SayEvery (a watcher's indexer), what vanishes run after run is
// said at once the first time, then summed and said once the interval
// has passed, or when asked to.
func TestVanishedSaidOncePerInterval(t *testing.T) {
	var said []string
	n := &readNotes{every: time.Hour, warn: func(s string) { said = append(said, s) }}
	n.add(3, 0, 0)
	if len(said) != 1 || !strings.Contains(said[0], "3 files vanished while being read") {
		t.Fatalf("the first not said at once: %q", said)
	}
	for i := 0; i < 100; i++ {
		n.add(2, 1, 1)
	}
	n.sayDue(false)
	if len(said) != 1 {
		t.Fatalf("said again within the interval: %q", said)
	}
	n.sayDue(true)
	if len(said) != 2 || !strings.Contains(said[1], "200 files vanished, 100 files changed, 100 folders vanished while being read") {
		t.Fatalf("the sums: %q", said)
	}
	n.sayDue(true)
	if len(said) != 2 {
		t.Fatalf("nothing new, yet said: %q", said)
	}
}
