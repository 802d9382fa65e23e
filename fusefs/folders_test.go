package fusefs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
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
