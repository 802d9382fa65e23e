package integration

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dupefs/dupefs/integration/testenv"
)

// Exit codes, as the README lists them.
const (
	exitOK       = 0
	exitNotFound = 1
	exitError    = 2
	exitUsage    = 3
	exitNoRoot   = 4
	exitBadIndex = 5
	exitDiskFull = 6
	exitMount    = 7
)

func TestCheckExitCodes(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	os.WriteFile(filepath.Join(dir, "a/photo.jpg"), []byte("jpeg bytes, pretend"), 0o644)
	os.WriteFile(filepath.Join(dir, "a/other"), []byte("something else!!!!!"), 0o644)
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)

	dl := filepath.Join(base, "downloads")
	os.Mkdir(dl, 0o755)
	os.WriteFile(filepath.Join(dl, "new.jpg"), []byte("jpeg bytes, pretend"), 0o644)
	os.WriteFile(filepath.Join(dl, "fresh.jpg"), []byte("never seen before!!"), 0o644)

	r := dupefs(t, db, "check", filepath.Join(dl, "new.jpg"))
	if r.code != exitOK || strings.TrimSpace(r.stdout) != filepath.Join(dir, "a/photo.jpg") {
		t.Errorf("known file: exit %d, stdout %q", r.code, r.stdout)
	}
	r = dupefs(t, db, "check", filepath.Join(dl, "fresh.jpg"))
	if r.code != exitNotFound || r.stdout != "" {
		t.Errorf("new file: exit %d, stdout %q", r.code, r.stdout)
	}
	r = dupefs(t, db, "check", filepath.Join(dl, "new.jpg"), filepath.Join(dl, "fresh.jpg"))
	if r.code != exitNotFound {
		t.Errorf("one known, one new: exit %d", r.code)
	}
	// A folder is checked file by file: fresh.jpg is new.
	if r := dupefs(t, db, "check", dl); r.code != exitNotFound || strings.TrimSpace(r.stdout) != filepath.Join(dl, "fresh.jpg") {
		t.Errorf("a folder: exit %d, stdout %q, want %d and the new file", r.code, r.stdout, exitNotFound)
	}
	for name, args := range map[string][]string{
		"missing file": {"check", filepath.Join(dl, "absent")},
		"no file":      {"check"},
	} {
		if r := dupefs(t, db, args...); r.code != exitError {
			t.Errorf("%s: exit %d, want %d (%s)", name, r.code, exitError, r.stderr)
		}
	}
	if r := dupefs(t, filepath.Join(base, "no-such.db"), "check", filepath.Join(dl, "new.jpg")); r.code != exitError {
		t.Errorf("no index: exit %d, want 2", r.code)
	}
}

func TestErrorExitCodes(t *testing.T) {
	base := t.TempDir()
	db := filepath.Join(base, "index.db")
	dir := filepath.Join(base, "tree")
	os.MkdirAll(dir, 0o755)
	mustRun(t, db, "index", dir)

	cases := []struct {
		name string
		db   string
		args []string
		code int
		msg  string
	}{
		{"missing root", db, []string{"index", filepath.Join(base, "nope")}, exitNoRoot, "no such folder"},
		{"root is a file", db, []string{"root", "add", "/etc/hostname"}, exitNoRoot, "not a folder"},
		{"unknown flag", db, []string{"index", "--no-such-flag"}, exitUsage, ""},
		{"bad format", db, []string{"groups", "--format", "xml"}, exitUsage, "--format"},
		{"bad hash", db, []string{"index", "--hash", "md5", dir}, exitUsage, "--hash"},
		{"no roots", filepath.Join(base, "empty.db"), []string{"index"}, exitUsage, "no roots"},
		{"no index", filepath.Join(base, "absent.db"), []string{"groups"}, exitBadIndex, "no index"},
		{"rm unknown root", db, []string{"root", "rm", "/nowhere"}, exitNoRoot, "not a root"},
	}
	for _, c := range cases {
		r := dupefs(t, c.db, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d mentioning %q", c.name, r.code, r.stderr, c.code, c.msg)
		}
		if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine") {
			t.Errorf("%s: panicked:\n%s", c.name, r.stderr)
		}
	}

	junk := filepath.Join(base, "junk.db")
	os.WriteFile(junk, bytes.Repeat([]byte("not sqlite "), 100), 0o644)
	if r := dupefs(t, junk, "status"); r.code != exitBadIndex || !strings.Contains(r.stderr, "corrupt") {
		t.Errorf("corrupt index: exit %d, stderr %q", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(junk); !bytes.Equal(b, bytes.Repeat([]byte("not sqlite "), 100)) {
		t.Error("opening a corrupt index changed it")
	}

	// A root that vanished (an unmounted disk): the scan fails, nothing of
	// what was indexed is lost.
	gone := filepath.Join(base, "gone")
	os.MkdirAll(gone, 0o755)
	os.WriteFile(filepath.Join(gone, "f1"), []byte("same"), 0o644)
	os.WriteFile(filepath.Join(gone, "f2"), []byte("same"), 0o644)
	mustRun(t, db, "index", gone)
	os.Rename(gone, gone+".away")
	if r := dupefs(t, db, "index"); r.code != exitNoRoot {
		t.Errorf("vanished root: exit %d, stderr %s", r.code, r.stderr)
	}
	os.Rename(gone+".away", gone)
	if g := groups(t, db, gone); len(g) != 1 {
		t.Errorf("groups after the root came back: %q", g)
	}
}

// dropDAC runs a command without the capabilities that let root read any
// file, so permissions apply to it as to a user.
func dropDAC(args ...string) *exec.Cmd {
	if os.Geteuid() != 0 {
		return exec.Command(args[0], args[1:]...)
	}
	return exec.Command("setpriv", append([]string{"--inh-caps=-dac_override,-dac_read_search",
		"--bounding-set=-dac_override,-dac_read_search"}, args...)...)
}

func TestUnreadableFoldersAndFiles(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	for _, d := range []string{"ok", "locked", "ok2"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "ok/a"), []byte("content"), 0o644)
	os.WriteFile(filepath.Join(dir, "ok2/b"), []byte("content"), 0o644)
	os.WriteFile(filepath.Join(dir, "locked/c"), []byte("content"), 0o644)
	os.WriteFile(filepath.Join(dir, "ok/secret"), []byte("content"), 0o000)
	os.Chmod(filepath.Join(dir, "locked"), 0o000)
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "locked"), 0o755) })

	db := filepath.Join(base, "index.db")
	cmd := dropDAC(bin, "--db", db, "index", dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("index with unreadable entries: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
	if g := groups(t, db, dir); !equalGroups(g, [][]string{{"ok/a", "ok2/b"}}) {
		t.Fatalf("groups: %q", g)
	}
	st := mustRun(t, db, "status").stdout
	if !strings.Contains(st, "unreadable:") {
		t.Errorf("status does not count the unreadable file:\n%s", st)
	}
}

func TestDiskFull(t *testing.T) {
	testenv.NeedRoot(t, "mounts a small tmpfs")
	base := t.TempDir()
	small := filepath.Join(base, "small")
	os.Mkdir(small, 0o755)
	if err := syscall.Mount("tmpfs", small, "tmpfs", 0, "size=600k,mode=0755"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(small, syscall.MNT_DETACH) })

	dir := filepath.Join(base, "tree")
	for i := 0; i < 40; i++ {
		sub := filepath.Join(dir, "d"+strings.Repeat("x", i%7), "sub"+string(rune('a'+i%26)))
		os.MkdirAll(sub, 0o755)
		for j := 0; j < 100; j++ {
			os.WriteFile(filepath.Join(sub, "a-file-with-a-long-name-"+string(rune('a'+j%26))+strings.Repeat("y", j)), []byte{'x', byte(j)}, 0o644)
		}
	}
	db := filepath.Join(small, "index.db")
	r := dupefs(t, db, "index", dir)
	if r.code != exitDiskFull || !strings.Contains(r.stderr, "full") {
		t.Fatalf("index on a full disk: exit %d\n%s", r.code, r.stderr)
	}
	if ok := integrityCheck(t, db); ok != "ok" {
		t.Fatalf("integrity after a full disk: %s", ok)
	}
	// Once there is room the same command finishes the job.
	if err := syscall.Mount("tmpfs", small, "tmpfs", syscall.MS_REMOUNT, "size=64m"); err != nil {
		t.Fatalf("grow tmpfs: %v", err)
	}
	mustRun(t, db, "index", dir)
	if g := groups(t, db, dir); len(g) != 100 {
		t.Fatalf("%d groups after the disk had room again, want 100", len(g))
	}
	if ok := integrityCheck(t, db); ok != "ok" {
		t.Fatalf("integrity: %s", ok)
	}
}
