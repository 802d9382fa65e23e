package indexer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/store"
)

// folderGroups returns the exact folder groups as sorted lists of paths
// relative to the tree.
func (e *env) folderGroups(layout bool) [][]string {
	e.tb.Helper()
	gs, err := e.db.Folders().ExactFolderGroups(context.Background(), layout, 1)
	if err != nil {
		e.tb.Fatal(err)
	}
	var out [][]string
	for _, g := range gs {
		var ps []string
		for _, f := range g.Folders {
			rel, _ := filepath.Rel(e.dir, f.Path)
			ps = append(ps, rel)
		}
		sort.Strings(ps)
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool { return strings.Join(out[i], "\x00") < strings.Join(out[j], "\x00") })
	return out
}

func (e *env) verifyFolderSigs() {
	e.tb.Helper()
	bad, err := e.db.Folders().VerifyFolderSigs(context.Background())
	if err != nil {
		e.tb.Fatal(err)
	}
	if len(bad) > 0 {
		e.tb.Fatalf("folder signatures out of step:\n%s", strings.Join(bad, "\n"))
	}
}

func TestFolderSignaturesFollowChanges(t *testing.T) {
	e := newEnv(t)
	tree(t, e.dir, map[string]string{
		"a/x/1": big(1, 5000), "a/x/2": "two", "a/y/3": "three",
		"b/x/1": big(1, 5000), "b/x/2": "two", "b/y/3": "three",
		"c/q/1": big(1, 5000), "c/q/2": "two", "c/3": "three",
	})
	e.addRoot(store.RootSpec{})
	e.run()
	e.verifyFolderSigs()
	got := e.folderGroups(false)
	t.Logf("groups %q", got)
	if len(got) != 1 || strings.Join(got[0], " ") != "a b c" {
		t.Fatalf("exact groups: %q", got)
	}
	// c/q holds the same relative paths as a/x and b/x; a and b are one
	// layout group, but c is not in it, so a/x b/x c/q is shown.
	if got := e.folderGroups(true); len(got) != 2 || strings.Join(got[0], " ") != "a b" || strings.Join(got[1], " ") != "a/x b/x c/q" {
		t.Fatalf("layout groups: %q", got)
	}
	os.WriteFile(filepath.Join(e.dir, "c/q/2"), []byte("tw0"), 0o644)
	e.run()
	e.verifyFolderSigs()
	if got := e.folderGroups(false); len(got) != 1 || strings.Join(got[0], " ") != "a b" {
		t.Fatalf("exact groups after a change: %q", got)
	}
	os.RemoveAll(filepath.Join(e.dir, "b/y"))
	e.run()
	e.verifyFolderSigs()
	if got := e.folderGroups(false); len(got) != 1 || strings.Join(got[0], " ") != "a/x b" {
		t.Fatalf("exact groups after a removal: %q", got)
	}
}

// TestFolderUpdateFollowsDepth: after one file changes, only its folder
// and that folder's ancestors get new sums, however large the tree.
func TestFolderUpdateFollowsDepth(t *testing.T) {
	e := newEnv(t)
	files := map[string]string{}
	for i := 0; i < 40; i++ {
		for j := 0; j < 20; j++ {
			files[fmt.Sprintf("t%d/s%d/f", i, j)] = fmt.Sprintf("file %d %d", i, j)
		}
	}
	tree(t, e.dir, files)
	e.addRoot(store.RootSpec{})
	e.run()
	os.WriteFile(filepath.Join(e.dir, "t7/s3/f"), []byte("changed"), 0o644)
	ix := New(IndexOf(e.db), e.config())
	if err := ix.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.verifyFolderSigs()
	// The folder, its parent and the root: 3 of 841 folders.
	if n := ix.cfg.Progress.FolderSums.Load(); n != 3 {
		t.Errorf("%d folders got new sums after one file changed, want 3", n)
	}
}

// A hard link made after its file was hashed (its size was shared then,
// no longer) counts in its folder's signature as the file does: both
// folders hold one inode, the same content, and are one folder group, as a
// first index of the tree finds them.
func TestHardLinkOfAHashedFileKeepsItsFolderGroup(t *testing.T) {
	e := newEnv(t)
	x := strings.Repeat("X", 77)
	tree(t, e.dir, map[string]string{"a/x": x, "a/k": "kkkkk", "b/k": "kkkkk", "c/y": strings.Repeat("Y", 77)})
	e.addRoot(store.RootSpec{})
	e.run()
	if err := os.Remove(filepath.Join(e.dir, "c/y")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(e.dir, "a/x"), filepath.Join(e.dir, "b/x")); err != nil {
		t.Fatal(err)
	}
	e.run()
	e.verifyFolderSigs()
	if got := e.folderGroups(false); len(got) != 1 || strings.Join(got[0], " ") != "a b" {
		t.Fatalf("exact groups after a hard link: %q, want [a b] as a first index finds", got)
	}
}
