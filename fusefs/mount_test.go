package fusefs

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/internal/pgtest"
	"github.com/dupefs/dupefs/store"
)

// TestMain detaches dupefs mounts a killed earlier run left under the
// temporary directory: t.Cleanup unmounts after a failure or a panic in a
// test, but does not run when go test -timeout kills the binary or on a
// SIGKILL, and a mount left behind would make every later run fail.
func TestMain(m *testing.M) {
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// Only a mount left by a test binary that died (its server
			// gone, so it answers ENOTCONN): another package's tests
			// may be mounting under the same folder at the same time.
			if len(fields) > 8 && strings.Contains(sc.Text(), " - fuse.dupefs ") &&
				strings.HasPrefix(fields[4], os.TempDir()) {
				if _, err := os.Stat(fields[4]); errors.Is(err, syscall.ENOTCONN) {
					Detach(fields[4])
				}
			}
		}
		f.Close()
	}
	os.Exit(pgtest.Main(m))
}

// testFS is an index and its mounted view.
type testFS struct {
	tb     testing.TB
	db     *store.DB
	mnt    string
	fs     *FS
	thumbs string // the thumbnail cache it serves
}

// mountTest opens a fresh index, lets fill populate it, and mounts it.
// Cleanup unmounts, even when the test fails or panics.
func mountTest(tb testing.TB, status func(context.Context) ([]byte, error)) *testFS {
	tb.Helper()
	return mountWith(tb, Config{Status: status})
}

// mountWith is mountTest with a config (its test knobs are set here).
func mountWith(tb testing.TB, cfg Config) *testFS {
	tb.Helper()
	return mountWrapped(tb, cfg, nil)
}

// mountWrapped is mountWith serving the index through wrap (nil: as is),
// for a test that watches what the view reads.
func mountWrapped(tb testing.TB, cfg Config, wrap func(Index) Index) *testFS {
	tb.Helper()
	testenv.NeedFUSE(tb)
	dir := tb.TempDir() // registered first, so removed after the unmount
	db, err := store.Open(context.Background(), store.Options{Path: filepath.Join(dir, "index.db")})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return mountDB(tb, db, dir, cfg, wrap)
}

// mountDB mounts the view of db at dir/mnt, its thumbnails in dir/thumbs.
func mountDB(tb testing.TB, db *store.DB, dir string, cfg Config, wrap func(Index) Index) *testFS {
	tb.Helper()
	mnt, thumbs := filepath.Join(dir, "mnt"), filepath.Join(dir, "thumbs")
	os.Mkdir(mnt, 0o755)
	os.Mkdir(thumbs, 0o700)
	cfg.PollInterval, cfg.Strict, cfg.ThumbDir = 50*time.Millisecond, true, thumbs
	cfg.Logf = func(format string, args ...any) { tb.Logf(format, args...) }
	var idx Index = db.View()
	if wrap != nil {
		idx = wrap(db.View())
	}
	f := New(idx, cfg)
	m, err := f.Mount(mnt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		done := make(chan struct{})
		go func() { m.Wait(); close(done) }()
		if _, err := m.Unmount(); err != nil {
			tb.Errorf("unmount: %v", err)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			tb.Error("the server did not stop after the unmount")
		}
	})
	return &testFS{tb: tb, db: db, mnt: mnt, fs: f, thumbs: thumbs}
}

// sum makes a fake 32-byte content hash.
func sum(i int) []byte {
	b := make([]byte, 32)
	binary.BigEndian.PutUint32(b, uint32(i))
	b[31] = 0xaa
	return b
}

// copyOf describes a file to add: folder, name, size, inode, content.
type copyOf struct {
	dir, name string
	size      int64
	ino       uint64
	content   int // 0: no hash
}

// add writes files through a scan batch, as the indexer does.
func (t *testFS) add(root string, files ...copyOf) {
	t.tb.Helper()
	var sc []scanned
	for _, f := range files {
		st := store.FileStat{Name: f.name, Size: f.size, MtimeNS: 1700000000e9, Dev: 1, Ino: f.ino, Nlink: 1}
		if f.content != 0 {
			st.Hash = &store.FileHash{Status: store.HashDone, Content: sum(f.content)}
		}
		sc = append(sc, scanned{f.dir, st})
	}
	t.scan(root, sc)
}

// scanned is a file a scan batch adds: its folder and what it says of it.
type scanned struct {
	dir string
	st  store.FileStat
}

// scan adds root and files through a scan batch.
func (t *testFS) scan(root string, files []scanned) {
	t.tb.Helper()
	ctx := context.Background()
	r, _, err := t.db.Files().AddRoot(ctx, store.RootSpec{Path: root}, false)
	if err != nil {
		t.tb.Fatal(err)
	}
	err = t.db.Write(ctx, func(tx *store.Tx) error {
		b, err := tx.ScanBatch(1, "sha256")
		if err != nil {
			return err
		}
		defer b.Close()
		folders := map[string]int64{}
		for _, f := range files {
			id, ok := folders[f.dir]
			if !ok {
				if id, err = b.AddFolder(r.ID, 0, f.dir, "", nil); err != nil {
					return err
				}
				folders[f.dir] = id
			}
			if err := b.AddFile(r.ID, id, f.st); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.tb.Fatal(err)
	}
}

func keyOf(i int) string { return fmt.Sprintf("sha256:%x", sum(i)) }

// names lists a folder of the mount.
func (t *testFS) names(rel string) []string {
	t.tb.Helper()
	ents, err := os.ReadDir(filepath.Join(t.mnt, rel))
	if err != nil {
		t.tb.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// eventually polls cond for a few seconds.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	testenv.Eventually(tb, 5*time.Second, what, cond)
}

// dirents reads a folder with getdents64 and a small buffer, returning
// names, inode numbers and offsets as the kernel handed them out.
type dirent struct {
	name string
	ino  uint64
	off  int64
}

func getdents(tb testing.TB, fd int, max int) []dirent {
	tb.Helper()
	buf := make([]byte, 512)
	var out []dirent
	for len(out) < max {
		n, err := syscall.Getdents(fd, buf)
		if err != nil {
			tb.Fatal(err)
		}
		if n == 0 {
			break
		}
		out = append(out, parseDirents(buf[:n])...)
	}
	return out
}

// parseDirents reads the entries of a getdents64 answer.
func parseDirents(b []byte) []dirent {
	var out []dirent
	for len(b) > 0 {
		reclen := binary.LittleEndian.Uint16(b[16:18])
		name := string(b[19:reclen])
		if i := strings.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		out = append(out, dirent{name: name, ino: binary.LittleEndian.Uint64(b[0:8]), off: int64(binary.LittleEndian.Uint64(b[8:16]))})
		b = b[reclen:]
	}
	return out
}
