package fusefs

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/internal/pgtest"
	"github.com/dupefs/dupefs/store/naming"
)

// Another host renamed while the view is mounted: the listings the kernel
// keeps of /by-hash and /by-folder name its copies and folders after its
// new name, and link to /net/NEW, within a poll or two; none keeps the
// old name, which no longer answers.
func TestRenamedHostRenamesItsCopies(t *testing.T) {
	testenv.NeedFUSE(t)
	url := pgtest.URL(t)
	laptop := openHost(t, url, "laptop")
	nas := openHost(t, url, "nas")
	top := t.TempDir()
	root, there := filepath.Join(top, "laptop"), filepath.Join(top, "nas")
	for _, d := range []string{root, filepath.Join(root, "a"), there} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a, n := filepath.Join(root, "a", "IMG.jpg"), filepath.Join(there, "IMG.jpg")
	for _, p := range []string{a, n} {
		if err := os.WriteFile(p, []byte("one photo"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	indexAs(t, laptop, root, a)
	scanAsHost(t, nas, n)
	foldHosts(t, nas, laptop)
	ctx := context.Background()
	fgs, err := laptop.View().FolderGroupsPage(ctx, 0, 10)
	if err != nil || len(fgs) != 1 {
		t.Fatalf("folder groups %+v (%v), want one", fgs, err)
	}
	tf := mountDB(t, laptop, t.TempDir(), Config{}, nil)
	dirs := []string{"by-hash/" + keyOf(9), "by-folder/" + naming.GroupKey("sha256", fgs[0].Sig)}
	// The host's copies as the view lists them, and where they link.
	remote := func(dir string) (names, targets []string) {
		for _, name := range tf.names(dir) {
			if h, _, ok := strings.Cut(name, ":"); ok {
				names = append(names, h)
				target, _ := os.Readlink(filepath.Join(tf.mnt, dir, name))
				targets = append(targets, target)
			}
		}
		return names, targets
	}
	for _, dir := range dirs {
		if hosts, targets := remote(dir); !slices.Equal(hosts, []string{"nas"}) || !strings.HasPrefix(targets[0], "/net/nas/") {
			t.Fatalf("%s before: hosts %q, targets %q", dir, hosts, targets)
		}
	}
	if err := laptop.Files().RenameHost(ctx, "nas", "nas2"); err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		eventually(t, dir+" names the host nas2", func() bool {
			hosts, targets := remote(dir)
			return slices.Equal(hosts, []string{"nas2"}) && strings.HasPrefix(targets[0], "/net/nas2/")
		})
	}
}
