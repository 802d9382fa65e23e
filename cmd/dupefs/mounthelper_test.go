package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// mount(8)'s arguments become dupefs mount's: roots from the source and
// root=, the indexer's options as flags, the generic ones dropped.
func TestHelperArgsMapMountOptions(t *testing.T) {
	args := []string{"dupefs", "/home/u/Pictures:/srv/photos", "/mnt/dupes", "-o",
		"ro,dev,suid,noatime,x-systemd.automount,db=/var/lib/dupefs/index.db,root=/a:b,workers=2,io-depth=8,rotational=no,no-watch,log=/tmp/l"}
	var warned []string
	out, logFile, err := helperArgs(args, func(s string) { warned = append(warned, s) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"dupefs", "--db", "/var/lib/dupefs/index.db", "mount", "/mnt/dupes", "/home/u/Pictures", "/srv/photos", "/a:b",
		"--workers", "2", "--io-depth", "8", "--rotational", "no", "--no-watch"}
	if !slices.Equal(out, want) || logFile != "/tmp/l" || len(warned) != 0 {
		t.Errorf("helperArgs = %q, log %q, warnings %q;\nwant %q, log /tmp/l", out, logFile, warned, want)
	}
	if _, _, err := helperArgs([]string{"dupefs", "/x", "/m", "-o", "ro,bogus=1"}, func(string) {}); err == nil {
		t.Error("an unknown option: no error")
	}
}

// The background process's log is its user's alone: made 0600, an
// existing one others may read made so, and never one reached through a
// symlink, one of another user, or anything but a regular file (a FIFO
// does not block it).
func TestMountLogIsPrivate(t *testing.T) {
	dir := t.TempDir()
	mode := func(p string) os.FileMode {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	fresh := filepath.Join(dir, "fresh.log")
	f, err := openLog(fresh)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if m := mode(fresh); m != 0o600 {
		t.Errorf("a new log is mode %04o, want 0600", m)
	}
	old := filepath.Join(dir, "old.log")
	os.WriteFile(old, []byte("before\n"), 0o644)
	os.Chmod(old, 0o644)
	f, err = openLog(old)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("after\n")
	f.Close()
	if b, _ := os.ReadFile(old); mode(old) != 0o600 || !strings.HasPrefix(string(b), "before\n") || !strings.HasSuffix(string(b), "after\n") {
		t.Errorf("an existing 0644 log is mode %04o, reading %q: want 0600, appended to", mode(old), b)
	}
	link := filepath.Join(dir, "link.log")
	os.Symlink(old, link)
	if f, err := openLog(link); err == nil {
		f.Close()
		t.Error("a log reached through a symlink was opened")
	}
	fifo := filepath.Join(dir, "fifo.log")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := openLog(fifo); err == nil {
		f.Close()
		t.Error("a FIFO was opened as the log")
	}
	if os.Geteuid() == 0 {
		theirs := filepath.Join(dir, "theirs.log")
		os.WriteFile(theirs, nil, 0o600)
		os.Chown(theirs, 65534, 65534)
		if f, err := openLog(theirs); err == nil {
			f.Close()
			t.Error("a log another user owns was opened")
		}
	}
}

// A PostgreSQL index is no file to check the modes of: the server decides
// who writes it, so mount --no-index serves it writable (thumbnails made)
// rather than read-only for want of a file at its URL.
func TestIndexWritableOfAPostgresIndex(t *testing.T) {
	if !indexWritable("postgres://dupefs@/dupefs?host=/run/postgresql") {
		t.Error("a PostgreSQL index taken for one this user may not write")
	}
	if indexWritable(filepath.Join(t.TempDir(), "none", "index.db")) {
		t.Error("an index in a folder that is not there taken for writable")
	}
}
