package indexer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/store"
)

// trashTree has a copy of a live file in each kind of Trash can and under
// a temporary name; docs/Trash (no home Trash) and notes/.Trash (a file)
// are no Trash.
var trashTree = map[string]string{
	"home/u/photos/a.jpg":                            "photo a",
	"home/u/.local/share/Trash/files/a.jpg":          "photo a",
	"home/u/.local/share/Trash/info/a.jpg.trashinfo": "[Trash Info]\nPath=/home/u/photos/a.jpg\n",
	"mnt/data/b":              "bee",
	"mnt/.Trash-1000/files/b": "bee",
	"mnt/.Trash/1000/files/b": "bee",
	".Trash-0/files/b":        "bee",
	"docs/c":                  "sea",
	tempFile:                  "sea",
	"docs/Trash/c":            "sea",
	"notes/d":                 "dee",
	"notes/.Trash":            "dee",
}

// inTrash are the files of trashTree in Trash cans, tempFile the one under
// a temporary name: no scan may index them.
var inTrash = []string{
	"home/u/.local/share/Trash/files/a.jpg",
	"home/u/.local/share/Trash/info/a.jpg.trashinfo",
	"mnt/.Trash-1000/files/b",
	"mnt/.Trash/1000/files/b",
	".Trash-0/files/b",
}

const tempFile = "docs/.dupefs-0123456789abcdef-7.tmp"

// trashGroups are the groups of trashTree with the Trash and temporary
// files left out.
var trashGroups = [][]string{{"docs/Trash/c", "docs/c"}, {"notes/.Trash", "notes/d"}}

func TestWalkLeavesTrashAndTempFilesOut(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	tree(t, e.dir, trashTree)
	e.addRoot(store.RootSpec{})
	e.run()
	e.wantGroups(trashGroups...)
	for _, rel := range append(inTrash, tempFile) {
		if f, err := e.db.Files().FileByPath(ctx, filepath.Join(e.dir, rel)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s indexed: %+v %v", rel, f, err)
		}
	}
	for _, rel := range []string{"home/u/.local/share/Trash", "mnt/.Trash-1000", "mnt/.Trash", ".Trash-0"} {
		if f, err := e.db.Files().FolderByPath(ctx, filepath.Join(e.dir, rel)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("folder %s indexed: %+v %v", rel, f, err)
		}
	}
	reads := e.reads()
	for _, rel := range append(inTrash, tempFile) {
		if n := reads["prefix "+rel] + reads["full "+rel]; n != 0 {
			t.Errorf("%s read %d times", rel, n)
		}
	}
}

// oldTrashIndex indexes trashTree as a dupefs that walked into Trash cans
// did, and checks it grouped their copies.
func oldTrashIndex(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	tree(t, e.dir, trashTree)
	e.addRoot(store.RootSpec{})
	skipTrash = false
	defer func() { skipTrash = true }()
	e.run()
	e.wantGroups(
		[]string{"home/u/.local/share/Trash/files/a.jpg", "home/u/photos/a.jpg"},
		[]string{".Trash-0/files/b", "mnt/.Trash-1000/files/b", "mnt/.Trash/1000/files/b", "mnt/data/b"},
		[]string{"docs/Trash/c", "docs/c"}, // the temporary file never was indexed
		[]string{"notes/.Trash", "notes/d"},
	)
	return e
}

// wantTrashGone checks the rows under Trash cans are missing.
func (e *env) wantTrashGone(ctx context.Context) {
	e.tb.Helper()
	e.wantGroups(trashGroups...)
	for _, rel := range inTrash {
		f, err := e.db.Files().FileByPath(ctx, filepath.Join(e.dir, rel))
		if err != nil || !f.Missing {
			e.tb.Errorf("%s after a rescan: %+v %v", rel, f, err)
		}
	}
}

// Rows an older dupefs indexed in Trash cans go missing with the next scan,
// though no listing changed: the folders holding the cans have the
// signatures the index holds, and nothing is read.
func TestRescanDropsWhatAnOlderDupefsIndexedInTrash(t *testing.T) {
	for _, preload := range []int64{preloadFolders, 0} {
		t.Run(fmt.Sprintf("preload %d", preload), func(t *testing.T) {
			defer func(p int64) { preloadFolders = p }(preloadFolders)
			preloadFolders = preload
			ctx := context.Background()
			e := oldTrashIndex(t)
			e.log.reset()
			e.run()
			if l := e.log.lines(); len(l) != 0 {
				t.Errorf("the rescan read %v", l)
			}
			e.wantTrashGone(ctx)
			tot, _ := e.db.Totals(ctx)
			if tot.Files != int64(len(trashTree)-len(inTrash)-1) {
				t.Errorf("%d live files, want %d", tot.Files, len(trashTree)-len(inTrash)-1)
			}
		})
	}
}

// A targeted scan never walks a Trash can, even one an older dupefs
// indexed; a scan of the folder holding it drops its rows.
func TestTargetedScanLeavesTrashOut(t *testing.T) {
	ctx := context.Background()
	e := oldTrashIndex(t)
	files := filepath.Join(e.dir, "home/u/.local/share/Trash/files")
	if err := os.WriteFile(filepath.Join(files, "new.jpg"), []byte("photo a"), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(e.dir, "home/u/photos/.dupefs-00000000000000ff.tmp")
	if err := os.WriteFile(tmp, []byte("photo a"), 0o644); err != nil {
		t.Fatal(err)
	}
	roots, _ := e.db.Files().Roots(ctx)
	ix := New(IndexOf(e.db), e.config())
	if _, err := ix.Rescan(ctx, roots[0].ID, []string{files, filepath.Join(e.dir, "home/u/photos")}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(files, "new.jpg"), tmp} {
		if f, err := e.db.Files().FileByPath(ctx, p); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s indexed by a targeted scan: %+v %v", p, f, err)
		}
	}
	if _, err := ix.Rescan(ctx, roots[0].ID, []string{filepath.Join(e.dir, "home/u/.local/share"),
		filepath.Join(e.dir, "mnt"), e.dir}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	e.wantTrashGone(ctx)
}

// A root in a Trash can is walked as an empty folder, with a warning.
func TestRootInTrashIndexesNothing(t *testing.T) {
	e := newEnv(t)
	tree(t, e.dir, trashTree)
	e.addRoot(store.RootSpec{Path: filepath.Join(e.dir, "mnt/.Trash-1000")})
	e.run()
	if tot, _ := e.db.Totals(context.Background()); tot.Files != 0 {
		t.Errorf("%d files indexed in a Trash can", tot.Files)
	}
	if len(e.warn) != 1 || !strings.Contains(e.warn[0], "in a Trash") {
		t.Errorf("warnings: %q", e.warn)
	}
}
