package fusefs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

func TestFolderGroupsShowAndGo(t *testing.T) {
	ctx := context.Background()
	tf := mountTest(t, nil)
	tf.add("/data",
		copyOf{"/data/a", "x", 10, 1, 1}, copyOf{"/data/a", "y", 20, 2, 2},
		copyOf{"/data/b", "x2", 10, 3, 1}, copyOf{"/data/b", "y2", 20, 4, 2},
		copyOf{"/data/c", "x", 10, 5, 1},
	)
	tf.add("/other", copyOf{"/other/a", "y3", 20, 6, 2}, copyOf{"/other/a", "x3", 10, 7, 1})
	if len(tf.names("by-folder")) != 0 {
		t.Fatal("folder groups listed before the signatures were folded in")
	}
	if _, err := tf.db.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	gs, err := tf.db.View().FolderGroupsPage(ctx, 0, 10)
	if err != nil || len(gs) != 1 || gs[0].Folders != 3 || gs[0].Files != 2 || gs[0].Bytes != 30 {
		t.Fatalf("folder groups: %+v %v", gs, err)
	}
	k := naming.GroupKey("sha256", gs[0].Sig)
	eventually(t, "the folder group lists", func() bool { n := tf.names("by-folder"); return len(n) == 1 && n[0] == k })
	names := tf.names("by-folder/" + k)
	if len(names) != 3 || names[0] != "a" || !regexpLike(names[1], "a~", "") || names[2] != "b" {
		t.Fatalf("folders of the group: %q", names)
	}
	var targets []string
	for _, n := range names {
		target, err := os.Readlink(filepath.Join(tf.mnt, "by-folder", k, n))
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, target)
	}
	slices.Sort(targets)
	if !slices.Equal(targets, []string{"/data/a", "/data/b", "/other/a"}) {
		t.Fatalf("links point at %q", targets)
	}
	// Lookups by name, by ~<id>, and of names that are not there.
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(tf.mnt, "by-folder", k, n)); err != nil {
			t.Errorf("lstat %s: %v", n, err)
		}
	}
	for _, bad := range []string{"by-folder/" + k + "/c", "by-folder/" + k + "/a~999", "by-folder/sha256:00", "by-folder/" + keyOf(1)} {
		if _, err := os.Lstat(filepath.Join(tf.mnt, bad)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("lstat %s: %v, want ENOENT", bad, err)
		}
	}

	// Two folders go: the group is gone from the mounted view.
	err = tf.db.Write(ctx, func(tx *store.Tx) error {
		b, _ := tx.ScanBatch(1, "sha256")
		defer b.Close()
		if err := b.LoseFolder("/data/b"); err != nil {
			return err
		}
		return b.LoseFolder("/other/a")
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tf.db.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the folder group goes", func() bool {
		_, err := os.Stat(filepath.Join(tf.mnt, "by-folder", k))
		return errors.Is(err, os.ErrNotExist) && len(tf.names("by-folder")) == 0
	})
	if tot, err := tf.db.Totals(ctx); err != nil || tot.FolderGroups != 0 {
		t.Fatalf("totals after: %+v %v", tot, err)
	}
}

// In a view others may enter, a folder group is there for a user who may
// read all of two of its folders, and gone when one of them closes; its
// owner lists it throughout.
func TestFolderGroupsInAViewOthersEnter(t *testing.T) {
	ctx := context.Background()
	tf := mountWith(t, Config{AllowOther: true})
	root := t.TempDir()
	os.Chmod(root, 0o755)
	os.Chmod(filepath.Dir(root), 0o755)
	var files []copyOf
	for _, rel := range []string{"a/x", "a/y", "b/x", "b/y"} {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		content := map[byte]int{'x': 1, 'y': 2}[rel[2]]
		if err := os.WriteFile(p, []byte{rel[2]}, 0o644); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		syscall.Stat(p, &st)
		files = append(files, copyOf{filepath.Dir(p), filepath.Base(p), 1, st.Ino, content})
	}
	tf.add(root, files...)
	if _, err := tf.db.Folders().UpdateFolderSigs(ctx); err != nil {
		t.Fatal(err)
	}
	gs, err := tf.db.View().FolderGroupsPage(ctx, 0, 10)
	if err != nil || len(gs) != 1 {
		t.Fatalf("folder groups: %+v %v", gs, err)
	}
	k := naming.GroupKey("sha256", gs[0].Sig)
	eventually(t, "the folder group lists", func() bool { n := tf.names("by-folder"); return len(n) == 1 && n[0] == k })
	if names := tf.names("by-folder/" + k); len(names) != 2 {
		t.Fatalf("folders of the group: %q", names)
	}
	user := &caller{uid: 1002, gid: 1002, key: "1002:1002"}
	group := ino(kindFolderGroup, gs[0].ID)
	if !tf.fs.visible(user, group) {
		t.Error("1002 may read both folders, and does not see their group")
	}
	os.Chmod(filepath.Join(root, "a/x"), 0o600)
	eventually(t, "the group goes for 1002", func() bool { return !tf.fs.visible(user, group) })
	if names := tf.names("by-folder/" + k); len(names) != 2 {
		t.Errorf("the owner lists %q, want both folders", names)
	}
}
