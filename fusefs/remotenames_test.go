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

// Another host's copies and folders are named from that host's roots, with
// their host: a copy of the nas under its root /srv is "srv on nas › …"
// though this host's root /srv/photos holds the same path, and in /overlap
// a pair's folder on the nas is nas:name, as /by-folder names it; each
// such name leads to its pair.
func TestAnotherHostsFoldersAreNamedWithTheirHost(t *testing.T) {
	testenv.NeedFUSE(t)
	url := pgtest.URL(t)
	laptop := openHost(t, url, "laptop")
	nas := openHost(t, url, "nas")
	mine := []copyOf{{dir: "/srv/photos/2019", name: "x.jpg", size: 10, ino: 1, content: 3},
		{dir: "/srv/photos/p", name: "mine", size: 20, ino: 99, content: 98}}
	theirs := []copyOf{{dir: "/srv/photos/2019", name: "x.jpg", size: 10, ino: 1, content: 3},
		{dir: "/srv/q", name: "theirs", size: 20, ino: 98, content: 99}}
	for i := range 6 {
		mine = append(mine, copyOf{dir: "/srv/photos/p", name: "f" + itoa(int64(i)), size: 20, ino: uint64(100 + i), content: 10 + i})
		theirs = append(theirs, copyOf{dir: "/srv/q", name: "f" + itoa(int64(i)), size: 20, ino: uint64(100 + i), content: 10 + i})
	}
	(&testFS{tb: t, db: laptop}).add("/srv/photos", mine...)
	(&testFS{tb: t, db: nas}).add("/srv", theirs...)
	if _, err := laptop.Folders().UpdateFolderSigs(context.Background()); err != nil {
		t.Fatal(err)
	}
	tf := mountDB(t, laptop, t.TempDir(), Config{ManyHosts: true}, nil)

	var places []string
	for _, label := range tf.names("files") {
		if strings.Contains(label, "x.jpg") {
			places = tf.names("files/" + label)
		}
	}
	for _, want := range []string{"photos › 2019 › x.jpg", "srv on nas › photos › 2019 › x.jpg"} {
		if !slices.Contains(places, want) {
			t.Errorf("/files names the copies of x.jpg %q, want %q among them", places, want)
		}
	}

	labels := tf.names("overlap")
	const label = "p ≈ nas:q (75.00%)"
	if !slices.Contains(labels, label) || slices.Contains(labels, "p ≈ q (75.00%)") {
		t.Fatalf("/overlap: %q, want %q", labels, label)
	}
	sides := tf.names("overlap/" + label)
	slices.Sort(sides)
	if want := []string{"only in photos › p", "only in srv on nas › q"}; !slices.Equal(sides, want) {
		t.Errorf("/overlap/%s: %q, want %q", label, sides, want)
	}
	for _, l := range labels {
		if _, err := os.Lstat(filepath.Join(tf.mnt, "overlap", l)); err != nil {
			t.Errorf("/overlap lists %q, but: %v", l, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(tf.mnt, "overlap", "p ≈ q (75.00%)")); err == nil {
		t.Error("the pair answers under its label without the nas's name too")
	}
}
