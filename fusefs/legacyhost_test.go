package fusefs

import (
	"context"
	"database/sql"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the driver of the raw session

	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/internal/pgtest"
)

// A host registered before host names were capped may have a longer name
// than a host may take now: every name the view makes of it (another
// host's copies and folders, the people's views, the pairs of /overlap)
// still fits 255 bytes and leads to what it names.
func TestLegacyLongHostNameFits(t *testing.T) {
	testenv.NeedFUSE(t)
	url := pgtest.URL(t)
	laptop := openHost(t, url, "laptop")
	nas := openHost(t, url, "nas")
	long := strings.Repeat("l", 240) + ".jpg"
	var mine, theirs []copyOf
	for i := range 6 {
		mine = append(mine, copyOf{dir: "/laptop/p", name: "f" + itoa(int64(i)), size: 20, ino: uint64(100 + i), content: 10 + i})
		theirs = append(theirs, copyOf{dir: "/srv/" + strings.Repeat("d", 200), name: "f" + itoa(int64(i)), size: 20,
			ino: uint64(100 + i), content: 10 + i})
	}
	mine = append(mine, copyOf{dir: "/laptop/p", name: "mine", size: 20, ino: 99, content: 98},
		copyOf{dir: "/laptop", name: "x.jpg", size: 10, ino: 1, content: 3})
	theirs = append(theirs, copyOf{dir: "/srv/" + strings.Repeat("d", 200), name: "theirs", size: 20, ino: 98, content: 99},
		copyOf{dir: "/srv/" + strings.Repeat("e", 200), name: long, size: 10, ino: 2, content: 3})
	// And a folder group of a folder of each.
	for i := range 2 {
		mine = append(mine, copyOf{dir: "/laptop/g", name: "g" + itoa(int64(i)), size: 30, ino: uint64(200 + i), content: 50 + i})
		theirs = append(theirs, copyOf{dir: "/srv/" + strings.Repeat("g", 200), name: "g" + itoa(int64(i)), size: 30,
			ino: uint64(200 + i), content: 50 + i})
	}
	(&testFS{tb: t, db: laptop}).add("/laptop", mine...)
	(&testFS{tb: t, db: nas}).add("/srv", theirs...)
	if _, err := laptop.Folders().UpdateFolderSigs(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The nas's name as an older dupefs let it be registered.
	host := strings.Repeat("n", 300)
	raw, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec("UPDATE hosts SET name = $1 WHERE name = 'nas'", host); err != nil {
		t.Fatal(err)
	}
	tf := mountDB(t, laptop, t.TempDir(), Config{ManyHosts: true}, nil)
	var links int
	err = filepath.WalkDir(tf.mnt, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if len(d.Name()) > maxName {
			t.Errorf("%s: a name of %d bytes: %.60q…", filepath.Dir(p), len(d.Name()), d.Name())
		}
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%.80q… listed, but: %v", p, err)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				t.Errorf("%.80q…: %v", p, err)
			} else if strings.HasPrefix(target, "/net/") {
				links++
				if !strings.HasPrefix(target, "/net/"+host+"/srv/") {
					t.Errorf("%.80q… -> %.80q…, want a link under /net/<the nas's name>", p, target)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if links == 0 {
		t.Fatal("the view shows no copy of the nas's")
	}
	if labels := tf.names("overlap"); len(labels) != 1 {
		t.Errorf("/overlap: %q, want the pair of /laptop/p and the nas's folder", labels)
	}
	if groups := tf.names("by-folder"); len(groups) != 1 {
		t.Errorf("/by-folder: %q, want the group of /laptop/g and the nas's folder", groups)
	}
}
