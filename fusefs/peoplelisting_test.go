package fusefs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A listing of /files read while groups come lists each group once, in
// rank order, names unique: a group ranked above where the listing had
// got to moves every later rank, and the listing goes on after the group
// it listed last, not after the place it had.
func TestFilesListingGoesOnAfterItsLastGroup(t *testing.T) {
	tf := mountTest(t, nil)
	const n = 120
	var files []copyOf
	for i := 1; i <= n; i++ {
		files = append(files, copyOf{fmt.Sprintf("/r/%d", i), "a.dat", int64(1000 + i), uint64(2 * i), i},
			copyOf{fmt.Sprintf("/r/%d", i), "b.dat", int64(1000 + i), uint64(2*i + 1), i})
	}
	tf.add("/r", files...)
	eventually(t, "the groups show", func() bool { return len(tf.names("files")) == n })
	fd, err := syscall.Open(filepath.Join(tf.mnt, "files"), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	buf := make([]byte, 1024) // a few entries a call
	var got []dirent
	read := func() bool {
		n, err := syscall.Getdents(fd, buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, parseDirents(buf[:n])...)
		return n > 0
	}
	read()
	read()
	// Groups that waste more than any: every rank below moves by three.
	gen := tf.fs.people.gen.Load()
	for i := 0; i < 3; i++ {
		tf.add("/s", copyOf{fmt.Sprintf("/s/%d", i), "x", 1 << 20, uint64(1000 + 2*i), 500 + i},
			copyOf{fmt.Sprintf("/s/%d", i), "y", 1 << 20, uint64(1001 + 2*i), 500 + i})
	}
	eventually(t, "the watcher sees the new groups", func() bool { return tf.fs.people.gen.Load() > gen })
	for read() {
	}
	inos, names := map[uint64]string{}, map[string]bool{}
	last := int64(0)
	for _, e := range got {
		if e.name == "." || e.name == ".." {
			continue
		}
		if prev, ok := inos[e.ino]; ok {
			t.Errorf("group %x listed twice: %q and %q", e.ino, prev, e.name)
		}
		if names[e.name] {
			t.Errorf("%q listed twice", e.name)
		}
		inos[e.ino], names[e.name] = e.name, true
		rank, err := strconv.ParseInt(strings.SplitN(e.name, " ", 2)[0], 10, 64)
		if err != nil || rank <= last {
			t.Errorf("%q after rank %d", e.name, last)
		}
		last = rank
	}
}

// So does the listing of a caller who sees less than everything.
func TestFilesListingGoesOnForACaller(t *testing.T) {
	ctx := context.Background()
	tf := mountWith(t, Config{AllowOther: true})
	root := t.TempDir()
	os.Chmod(root, 0o755)
	os.Chmod(filepath.Dir(root), 0o755)
	var files []realFile
	for i := 1; i <= 6; i++ {
		files = append(files, realFile{rel: fmt.Sprintf("%d/a", i), size: 100 + i, mode: 0o644, content: i},
			realFile{rel: fmt.Sprintf("%d/b", i), size: 100 + i, mode: 0o644, content: i})
	}
	tf.realTree(root, files...)
	c := &caller{uid: 1002, gid: 1002, key: "1002:1002"}
	es, err := tf.fs.labelLister(c)(ctx, 2)
	if err != nil || len(es) != 6 {
		t.Fatalf("the caller's /files: %+v %v", es, err)
	}
	rest, err := tf.fs.labelLister(c)(ctx, es[2].Off)
	if err != nil || len(rest) != 3 || rest[0].Ino != es[3].Ino {
		t.Fatalf("resumed after the third: %+v %v", rest, err)
	}
	gen := tf.fs.people.gen.Load()
	tf.realTree(root, realFile{rel: "big/a", size: 5000, mode: 0o644, content: 50},
		realFile{rel: "big/b", size: 5000, mode: 0o644, content: 50})
	eventually(t, "the watcher sees the new group", func() bool { return tf.fs.people.gen.Load() > gen })
	rest, err = tf.fs.labelLister(c)(ctx, es[2].Off)
	if err != nil || len(rest) != 3 || rest[0].Ino != es[3].Ino || !strings.HasPrefix(rest[0].Name, "5 · ") {
		t.Fatalf("resumed after the third, one group above it since: %+v %v", rest, err)
	}
}
