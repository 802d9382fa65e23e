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
	"github.com/dupefs/dupefs/store"
)

// The names of another host's copies and folders stay within 255 bytes,
// however long the host's name (64 bytes at most) and theirs: the stem is
// cut, the copy told by its id, and every name listed answers a lookup
// with its link.
func TestLongNamesOfAnotherHostFit(t *testing.T) {
	testenv.NeedFUSE(t)
	url := pgtest.URL(t)
	laptop := openHost(t, url, "laptop")
	host := strings.Repeat("n", 64)
	nas := openHost(t, url, host)
	long := strings.Repeat("l", 240) + ".jpg"
	there := []string{"/srv/" + strings.Repeat("d", 250), "/srv2/" + strings.Repeat("d", 250)}
	(&testFS{tb: t, db: laptop}).add("/laptop", copyOf{dir: "/laptop", name: "x.jpg", size: 10, ino: 1, content: 3},
		copyOf{dir: "/laptop", name: "f", size: 20, ino: 2, content: 4})
	for i, root := range there {
		(&testFS{tb: t, db: nas}).add(root, copyOf{dir: root, name: long, size: 10, ino: uint64(10 + i), content: 3},
			copyOf{dir: root, name: "f", size: 20, ino: uint64(20 + i), content: 4})
	}
	for _, db := range []*store.DB{nas, laptop} {
		if _, err := db.Folders().UpdateFolderSigs(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	tf := mountDB(t, laptop, t.TempDir(), Config{}, nil)
	targets := func(rel string) []string {
		t.Helper()
		var out []string
		for _, n := range tf.names(rel) {
			if len(n) > maxName {
				t.Errorf("%s: a name of %d bytes: %.40q…", rel, len(n), n)
			}
			target, err := os.Readlink(filepath.Join(tf.mnt, rel, n))
			if err != nil {
				t.Errorf("%s: %.40q… listed, but: %v", rel, n, err)
				continue
			}
			out = append(out, target)
		}
		slices.Sort(out)
		return out
	}
	want := []string{"/laptop/x.jpg", "/net/" + host + there[0] + "/" + long, "/net/" + host + there[1] + "/" + long}
	if got := targets("by-hash/" + keyOf(3)); !slices.Equal(got, want) {
		t.Errorf("/by-hash links to %q, want %q", got, want)
	}
	keys := tf.names("by-folder")
	if len(keys) != 1 {
		t.Fatalf("/by-folder: %q, want one group", keys)
	}
	want = []string{"/laptop", "/net/" + host + there[0], "/net/" + host + there[1]}
	if got := targets("by-folder/" + keys[0]); !slices.Equal(got, want) {
		t.Errorf("/by-folder links to %q, want %q", got, want)
	}
}

// A copy here whose name holds ':' does not take the name of another
// host's copy (HOST:name): in an index many hosts share it is named by its
// id, and each name of a group is listed once and leads to its copy.
func TestLocalNameLikeAnotherHostsCopy(t *testing.T) {
	testenv.NeedFUSE(t)
	url := pgtest.URL(t)
	laptop := openHost(t, url, "laptop")
	nas := openHost(t, url, "nas")
	(&testFS{tb: t, db: laptop}).add("/laptop", copyOf{dir: "/laptop", name: "nas:x.jpg", size: 10, ino: 1, content: 3},
		copyOf{dir: "/laptop", name: "y.jpg", size: 10, ino: 2, content: 3})
	(&testFS{tb: t, db: nas}).add("/srv", copyOf{dir: "/srv", name: "x.jpg", size: 10, ino: 1, content: 3})
	for _, cfg := range []Config{{ManyHosts: true}, {ManyHosts: true, AllowOther: true}} {
		tf := mountDB(t, laptop, t.TempDir(), cfg, nil)
		names := tf.names("by-hash/" + keyOf(3))
		var got []string
		for _, n := range names {
			target, err := os.Readlink(filepath.Join(tf.mnt, "by-hash", keyOf(3), n))
			if err != nil {
				t.Fatalf("%s listed, but: %v", n, err)
			}
			got = append(got, target)
		}
		slices.Sort(got)
		want := []string{"/laptop/nas:x.jpg", "/laptop/y.jpg", "/net/nas/srv/x.jpg"}
		if !slices.Equal(got, want) || len(slices.Compact(slices.Sorted(slices.Values(names)))) != 3 {
			t.Errorf("allow-other %v: names %q lead to %q, want three names leading to %q", cfg.AllowOther, names, got, want)
		}
	}
}
