package fusefs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// listAs lists a folder made for people as c does: the entries readdir
// keeps for c.
func (t *testFS) listAs(c *caller, node uint64) []string {
	t.tb.Helper()
	_, _, _, fetch, st := t.fs.listerPeople(c, node)
	if st != 0 {
		t.tb.Fatalf("lister of %d: %v", node, st)
	}
	var out []string
	for off := uint64(2); ; {
		es, err := fetch(context.Background(), off)
		if err != nil {
			t.tb.Fatal(err)
		}
		for _, e := range es {
			if t.fs.visible(c, e.Ino) {
				out = append(out, e.Name)
			}
			off = e.Off
		}
		if len(es) < pageSize {
			return out
		}
	}
}

// In a view others may enter, a user sees a pair when they may read all
// of both folders, a folder group when they may read all of two of its
// folders, counted and listed among those they may read all of; the
// owner sees everything.
func TestPeopleFoldersInAViewOthersEnter(t *testing.T) {
	tf := mountWith(t, Config{AllowOther: true})
	top := t.TempDir()
	os.Chmod(top, 0o755)
	os.Chmod(filepath.Dir(top), 0o755)
	root := filepath.Join(top, "home")
	files := homeAndBackup()
	for _, g := range []string{"g1", "g2", "g3"} {
		files[g+"/src/s1"], files[g+"/src/s2"], files[g+"/own"] = body(70, 300), body(71, 300), body(int(g[1]), 300)
	}
	writeTree(t, root, files)
	tf.index(root)
	user := &caller{uid: 1002, gid: 1002, key: "1002:1002"}
	const pair = "Pictures ≈ backup (97.50%)"
	const three, two = "src (3 folders, 2 files, 600 B each)", "src (2 folders, 2 files, 600 B each)"
	if got := tf.listAs(user, inoOverlap); !slices.Contains(got, pair) {
		t.Fatalf("1002 lists %q, want %q among them", got, pair)
	}
	if got := tf.listAs(user, inoFolders); !slices.Contains(got, three) {
		t.Fatalf("1002 lists %q, want %q among them", got, three)
	}
	os.Chmod(filepath.Join(root, "backup/git/g050"), 0o600)
	os.Chmod(filepath.Join(root, "g3/src/s2"), 0o600)
	eventually(t, "1002 sees neither the pair nor the third folder", func() bool {
		got, groups := tf.listAs(user, inoOverlap), tf.listAs(user, inoFolders)
		return !slices.Contains(got, pair) && slices.Contains(groups, two) && !slices.Contains(groups, three)
	})
	gs, err := tf.db.View().FolderGroupsPage(context.Background(), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		if g.Folders != 3 {
			continue
		}
		if got := tf.listAs(user, ino(kindPeopleGroup, g.ID)); !slices.Equal(got, []string{"home › g1 › src", "home › g2 › src"}) {
			t.Errorf("1002 lists the folders %q", got)
		}
		if got := tf.listAs(nil, ino(kindPeopleGroup, g.ID)); len(got) != 3 {
			t.Errorf("the owner lists the folders %q", got)
		}
	}
	if got := tf.names("overlap"); !slices.Contains(got, pair) {
		t.Errorf("the owner lists %q, want %q among them", got, pair)
	}
	if got := tf.names("folders"); !slices.Contains(got, three) {
		t.Errorf("the owner lists %q, want %q among them", got, three)
	}
}

// mountRepeatPair mounts a view others may enter of a root r whose folders
// A and B make a pair, two files only in A read alike ("a/b", "a › b").
func mountRepeatPair(t *testing.T) (*testFS, string) {
	tf := mountWith(t, Config{AllowOther: true})
	top := t.TempDir()
	os.Chmod(top, 0o755)
	os.Chmod(filepath.Dir(top), 0o755)
	root := filepath.Join(top, "r")
	files := map[string]string{"A/a/b": body(1, 300), "A/a › b": body(2, 300)}
	for i := range 4 {
		files[fmt.Sprintf("A/x%d", i)], files[fmt.Sprintf("B/y%d", i)] = body(10+i, 300), body(10+i, 300)
	}
	writeTree(t, root, files)
	tf.index(root)
	return tf, root
}

// In a view others may enter, a file of a pair's list told apart by its
// id shows the id as every number of such a view shows (enciphered), and
// is found by that name, not by its row's.
func TestPairFileIDsEnciphered(t *testing.T) {
	ctx := context.Background()
	tf, _ := mountRepeatPair(t)
	const side = "overlap/A ≈ B (66.67%)/only in r › A"
	var names []string
	eventually(t, "the pair lists", func() bool {
		_, err := os.Stat(filepath.Join(tf.mnt, side))
		if err == nil {
			names = tf.names(side)
		}
		return len(names) == 2
	})
	ps, err := tf.db.View().PairsPage(ctx, 0, 10)
	if err != nil || len(ps) != 1 {
		t.Fatalf("pairs %+v, %v", ps, err)
	}
	fs, err := tf.db.View().PairFilesPage(ctx, ps[0].ID, 0, 0, 10)
	if err != nil || len(fs) != 2 {
		t.Fatalf("files %+v, %v", fs, err)
	}
	repeat := fs[1]
	if repeat.Name != naming.WithID("a › b", repeat.FileID, true) {
		t.Fatalf("the index keeps %q", repeat.Name)
	}
	shown := naming.WithID("a › b", tf.fs.ids.shownID(repeat.FileID), true)
	if !slices.Equal(names, []string{"a › b", shown}) || shown == repeat.Name {
		t.Fatalf("%s lists %q, want a › b and %q", side, names, shown)
	}
	if target, err := os.Readlink(filepath.Join(tf.mnt, side, shown)); err != nil || target != repeat.Path {
		t.Errorf("%s -> %q, %v; want %s", shown, target, err, repeat.Path)
	}
	if _, err := os.Lstat(filepath.Join(tf.mnt, side, repeat.Name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lstat %q: %v, want ENOENT", repeat.Name, err)
	}
}

// A file of a pair's list whose " ~<id>" name a file on disk already has
// is told apart by " ~<id>-2": in a view others may enter that id too
// shows enciphered, never as its row's number, and is found by its name.
func TestPairFileSecondTryEnciphered(t *testing.T) {
	ctx := context.Background()
	tf, root := mountRepeatPair(t)
	repeatOf := func(want int) store.PairFile {
		t.Helper()
		var ps []store.FolderPairInfo
		var fs []store.PairFile
		eventually(t, "the pair's list is kept", func() bool {
			var err error
			if ps, err = tf.db.View().PairsPage(ctx, 0, 10); err != nil || len(ps) != 1 {
				return false
			}
			fs, err = tf.db.View().PairFilesPage(ctx, ps[0].ID, 0, 0, 10)
			return err == nil && len(fs) == want
		})
		for _, f := range fs {
			if id, _, ok := naming.TagOf(f.Name); ok && id == f.FileID {
				return f
			}
		}
		t.Fatalf("no file of %+v is told apart by its id", fs)
		return store.PairFile{}
	}
	raw := repeatOf(2).FileID
	// A file on disk takes the name the repeat had in the index.
	writeTree(t, root, map[string]string{"A/" + naming.WithID("a › b", raw, true): body(3, 300)})
	tf.index(root)
	repeat := repeatOf(3)
	if repeat.FileID != raw || repeat.Name != naming.Tagged("a › b", raw, 2, true) {
		t.Fatalf("the index keeps %+v, want file %d as %q", repeat, raw, naming.Tagged("a › b", raw, 2, true))
	}
	labels := tf.names("overlap")
	if len(labels) != 1 {
		t.Fatalf("/overlap lists %q", labels)
	}
	side := filepath.Join("overlap", labels[0], "only in r › A")
	shown := naming.Tagged("a › b", tf.fs.ids.shownID(raw), 2, true)
	names := tf.names(side)
	if !slices.Contains(names, shown) || slices.Contains(names, repeat.Name) {
		t.Fatalf("%s lists %q, want %q and not %q", side, names, shown, repeat.Name)
	}
	if target, err := os.Readlink(filepath.Join(tf.mnt, side, shown)); err != nil || target != repeat.Path {
		t.Errorf("%s -> %q, %v; want %s", shown, target, err, repeat.Path)
	}
}
