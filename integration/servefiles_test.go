package integration

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// With --serve files, each copy in /by-hash is a read-only file: cmp and
// sha256sum agree with the originals, rsync -a copies real files, and every
// write fails with EROFS while the original stays as it was.
func TestServeFiles(t *testing.T) {
	base := t.TempDir()
	tree := filepath.Join(base, "tree")
	os.MkdirAll(filepath.Join(tree, "sub"), 0o755)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	big[12345] = 'x'
	for _, p := range []string{"a.bin", "sub/a-copy.bin"} {
		os.WriteFile(filepath.Join(tree, p), big, 0o644)
	}
	small := []byte(strings.Repeat("small ", 10))
	for _, p := range []string{"s1", "sub/s2", "sub/s3"} {
		os.WriteFile(filepath.Join(tree, p), small, 0o644)
	}
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	db := filepath.Join(base, "index.db")
	p := startMount(t, db, mnt, tree, "--serve", "files")
	waitIndexed(t, mnt)

	groupsDir := filepath.Join(mnt, "by-hash")
	keys, _ := os.ReadDir(groupsDir)
	if len(keys) != 2 {
		t.Fatalf("%d groups, want 2", len(keys))
	}
	n := 0
	for _, k := range keys {
		dir := filepath.Join(groupsDir, k.Name())
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			path := filepath.Join(dir, e.Name())
			fi, err := os.Lstat(path)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o444 {
				t.Fatalf("%s: %v %v, want a read-only regular file", path, fi.Mode(), err)
			}
			want := small
			if fi.Size() == int64(len(big)) {
				want = big
			}
			if out, err := sh(t, "cmp "+path+" "+filepath.Join(tree, map[bool]string{true: "a.bin", false: "s1"}[fi.Size() == int64(len(big))])); err != nil {
				t.Errorf("cmp: %v %s", err, out)
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: read %d bytes (%v), want %d", path, len(got), err, len(want))
			}
			// Every way of writing fails with EROFS.
			for _, flag := range []int{os.O_WRONLY, os.O_RDWR, os.O_WRONLY | os.O_TRUNC, os.O_WRONLY | os.O_APPEND} {
				if f, err := os.OpenFile(path, flag, 0); !errors.Is(err, syscall.EROFS) {
					if f != nil {
						f.Close()
					}
					t.Errorf("open %s with %#x: %v, want EROFS", path, flag, err)
				}
			}
			if out, err := sh(t, "echo x > "+path); err == nil || !strings.Contains(out, "Read-only file system") {
				t.Errorf("echo x > %s: %v %s", path, err, out)
			}
			for what, err := range map[string]error{"truncate": os.Truncate(path, 0), "chmod": os.Chmod(path, 0o666),
				"chtimes": os.Chtimes(path, time.Now(), time.Now()), "remove": os.Remove(path)} {
				if !errors.Is(err, syscall.EROFS) {
					t.Errorf("%s %s: %v, want EROFS", what, path, err)
				}
			}
			n++
		}
	}
	if n != 5 {
		t.Fatalf("%d copies served, want 5", n)
	}
	// The originals are as they were.
	for _, p := range []string{"a.bin", "sub/a-copy.bin"} {
		if b, _ := os.ReadFile(filepath.Join(tree, p)); !bytes.Equal(b, big) {
			t.Errorf("%s changed", p)
		}
	}
	if out, err := sh(t, "cd "+groupsDir+" && sha256sum */* | awk '{print $1}' | sort | uniq -c | awk '{print $1}' | sort | tr '\\n' ' '"); err != nil || strings.TrimSpace(out) != "2 3" {
		t.Errorf("sha256sum of the copies: %q %v", out, err)
	}
	// rsync -a of a group folder copies real files.
	dst := filepath.Join(base, "rsynced")
	if out, err := sh(t, "rsync -a "+groupsDir+"/ "+dst+"/"); err != nil {
		t.Fatalf("rsync -a: %v\n%s", err, out)
	}
	if out, _ := sh(t, "find "+dst+" -type f | wc -l; find "+dst+" -type l | wc -l"); strings.Fields(out)[0] != "5" || strings.Fields(out)[1] != "0" {
		t.Errorf("rsync -a copied %q (files, symlinks), want 5 files", out)
	}
	p.stop(t)
}
