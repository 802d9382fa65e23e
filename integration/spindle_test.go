package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/integration/loopfs"
)

// On a real loop device whose queue says it rotates, `dupefs index` says
// so and still finds the duplicates; when the queue says it does not, or
// with --rotational no, it says nothing of the kind.
func TestIndexTellsWhichDiskRotates(t *testing.T) {
	for _, kind := range []string{"ext4", "btrfs"} {
		t.Run(kind, func(t *testing.T) { testRotatingDisk(t, kind) })
	}
}

// testRotatingDisk runs the test on a file system of kind (btrfs gives its
// files an anonymous device: dupefs finds the loop device in the mount
// table).
func testRotatingDisk(t *testing.T, kind string) {
	mnt := loopfs.Mount(t, kind, 0)
	out, err := exec.Command("findmnt", "-n", "-o", "SOURCE", mnt).Output()
	if err != nil {
		t.Fatalf("findmnt %s: %v", mnt, err)
	}
	dev := filepath.Join("/sys/class/block", filepath.Base(strings.TrimSpace(string(out))))
	name := filepath.Base(dev)
	flag := filepath.Join(dev, "queue", "rotational")
	setFlag := func(v string) {
		t.Helper()
		if err := os.WriteFile(flag, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	orig, err := os.ReadFile(flag)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(flag, bytes.TrimSpace(orig), 0o644) })

	tree := filepath.Join(mnt, "photos")
	os.Mkdir(tree, 0o755)
	photo := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	edit := bytes.Clone(photo)
	edit[len(edit)/2] = '!' // same size, same ends, another content
	for n, b := range map[string][]byte{"a.jpg": photo, "copy of a.jpg": photo, "a edited.jpg": edit} {
		if err := os.WriteFile(filepath.Join(tree, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	said := name + " rotates"
	base := t.TempDir()
	for i, c := range []struct {
		flag string
		args []string
		says bool
	}{
		{"1", nil, true},
		{"0", nil, false},
		{"1", []string{"--rotational", "no"}, false},
	} {
		setFlag(c.flag)
		db := filepath.Join(base, fmt.Sprintf("%d.db", i))
		r := mustRun(t, db, append(append([]string{"index"}, c.args...), tree)...)
		if got := strings.Contains(r.stderr, said); got != c.says {
			t.Errorf("rotational %s %v: stderr %q; want %q in it: %v", c.flag, c.args, r.stderr, said, c.says)
		}
		g := groups(t, db, tree)
		if len(g) != 1 || len(g[0]) != 2 {
			t.Errorf("rotational %s %v: groups %q, want the photo and its copy", c.flag, c.args, g)
		}
	}
}
