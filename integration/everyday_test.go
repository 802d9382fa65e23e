package integration

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
)

// The unit files pass systemd-analyze verify (as a user unit and a system
// unit), rendered for the test's binary, with no warning.
func TestSystemdUnitsVerify(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Fatal("systemd-analyze is missing (Debian package systemd; .ci/run installs it)")
	}
	for _, kind := range []string{"user", "system"} {
		dir := t.TempDir()
		src, err := os.ReadFile(filepath.Join("..", "cmd/dupefs/dist/systemd", kind, "dupefs-mount@.service.in"))
		if err != nil {
			t.Fatal(err)
		}
		unit := strings.ReplaceAll(string(src), "@BINDIR@", filepath.Dir(bin))
		// An instance, as systemctl enable dupefs-mount@$(systemd-escape -p /mnt/dupes) makes.
		path := filepath.Join(dir, "dupefs-mount@mnt-dupes.service")
		os.WriteFile(path, []byte(unit), 0o644)
		args := []string{"verify", "--man=no", path}
		env := os.Environ()
		if kind == "user" {
			args = append([]string{"--user"}, args...)
			run := filepath.Join(dir, "run")
			os.Mkdir(run, 0o700)
			env = append(env, "XDG_RUNTIME_DIR="+run)
		}
		cmd := exec.Command("systemd-analyze", args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("systemd-analyze verify of the %s unit: %v\n%s", kind, err, out)
		}
	}
}

// Started by systemd (Type=notify), dupefs mount sends READY=1 only once
// the mount answers, and STOPPING=1 on SIGTERM; then it unmounts and exits
// 130 (SuccessExitStatus in the units).
func TestNotifySocket(t *testing.T) {
	base := t.TempDir()
	sock := filepath.Join(base, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tree := filepath.Join(base, "tree")
	os.MkdirAll(tree, 0o755)
	os.WriteFile(filepath.Join(tree, "a"), []byte("x"), 0o644)
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	p := startMountEnv(t, []string{"NOTIFY_SOCKET=" + sock}, filepath.Join(base, "index.db"), mnt, tree)
	next := func(what string) string {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		buf := make([]byte, 4096)
		n, _, err := conn.ReadFromUnix(buf)
		if err != nil {
			t.Fatalf("waiting for %s: %v\n%s", what, err, p.stderr)
		}
		return string(buf[:n])
	}
	msg := next("READY=1")
	if !strings.Contains(msg, "READY=1") {
		t.Fatalf("first notification %q, want READY=1", msg)
	}
	// By then the mount answers (startMountEnv saw it too, but READY must
	// not come before).
	if _, err := os.ReadFile(filepath.Join(mnt, "status.json")); err != nil {
		t.Fatalf("READY=1 sent, but the mount does not answer: %v", err)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if msg := next("STOPPING=1"); !strings.Contains(msg, "STOPPING=1") {
		t.Errorf("on SIGTERM: %q, want STOPPING=1", msg)
	}
	p.wait(t, 10*time.Second, "SIGTERM")
	if code := p.cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d, want 130", code)
	}
	if isMounted(mnt) {
		t.Error("still mounted after SIGTERM")
	}
}

// mount(8) with an fstab-style source runs dupefs as mount.fuse does,
// returns once the view answers, and umount ends the background process.
func TestMountHelper(t *testing.T) {
	testenv.NeedFUSE(t)
	for _, form := range []string{"fuse", "fuse.dupefs"} {
		t.Run(form, func(t *testing.T) {
			base := t.TempDir()
			tree := filepath.Join(base, "tree")
			os.MkdirAll(tree, 0o755)
			os.WriteFile(filepath.Join(tree, "a"), []byte("same"), 0o644)
			os.WriteFile(filepath.Join(tree, "b"), []byte("same"), 0o644)
			mnt := filepath.Join(base, "mnt")
			os.Mkdir(mnt, 0o755)
			db := filepath.Join(base, "index.db")
			source := bin + "#" + tree
			if form == "fuse.dupefs" {
				// mount.fuse finds dupefs on the PATH mount(8) gives it,
				// which holds /usr/local/bin: put the test's binary there.
				source = tree
				onDefaultPath(t)
			}
			cmd := exec.Command("mount", "-t", form, source, mnt, "-o", "ro,noatime,x-systemd.automount,db="+db)
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
			start := time.Now()
			out, err := cmd.CombinedOutput()
			took := time.Since(start)
			t.Cleanup(func() {
				if isMounted(mnt) {
					syscall.Unmount(mnt, syscall.MNT_DETACH)
				}
			})
			if err != nil {
				t.Fatalf("mount: %v\n%s\n%s", err, out, readFile(filepath.Join(base, "dupefs-mount.log")))
			}
			if _, err := os.ReadFile(filepath.Join(mnt, "status.json")); err != nil {
				t.Fatalf("mount returned (%s) but the view does not answer: %v", took, err)
			}
			t.Logf("mount returned in %s", took)
			waitIndexed(t, mnt)
			if g := mountedGroups(t, mnt, base); !equalGroups(g, [][]string{{"tree/a", "tree/b"}}) {
				t.Errorf("groups %q", g)
			}
			pid := daemonOf(mnt)
			if pid == 0 {
				t.Fatal("no background dupefs serving the mount")
			}
			if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
				t.Fatalf("umount: %v %s", err, out)
			}
			waitFor(t, 10*time.Second, "the background process to end", func() bool { return daemonOf(mnt) == 0 })
			if log := readFile(filepath.Join(base, "dupefs-mount.log")); !strings.Contains(log, "unmounted") {
				t.Errorf("log: %q", log)
			}
		})
	}
	// A bad option fails the mount, with the reason, and mounts nothing.
	base := t.TempDir()
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	out, err := exec.Command("mount", "-t", "fuse", bin+"#"+base, mnt, "-o", "ro,bogus=1,db="+filepath.Join(base, "i.db")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "bogus") || isMounted(mnt) {
		t.Errorf("mount with a bad option: %v %s (mounted %v)", err, out, isMounted(mnt))
	}
}

// onDefaultPath links the test's binary as /usr/local/bin/dupefs for the
// test.
func onDefaultPath(t *testing.T) {
	t.Helper()
	const p = "/usr/local/bin/dupefs"
	if _, err := os.Lstat(p); err == nil {
		t.Fatalf("%s exists: the test would use it instead of the binary under test; move it aside", p)
	}
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.Symlink(bin, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(p) })
}

// daemonOf finds the background dupefs serving mnt.
func daemonOf(mnt string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if slices.Contains(args, "--ready-fd") && slices.Contains(args, mnt) {
			var pid int
			for _, c := range strings.Split(p, "/")[2] {
				pid = pid*10 + int(c-'0')
			}
			return pid
		}
	}
	return 0
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// mount(8) with the index in a folder that exists and others may enter
// (db=/var/lib/dupefs/index.db, as the README's fstab line has it) writes
// the background process's messages to dupefs-mount.log beside the index.
// Its warnings name files of every user ("/…/private/x: file changed
// while it was read; queued again"): it is private as the index is, made
// 0600, and one an older dupefs left readable (0644) is made so.
func TestMountHelperLogIsPrivate(t *testing.T) {
	testenv.NeedRoot(t, "mounts a FUSE file system with mount(2)")
	base, tree, write := privTree(t)
	write("a", "same", 0o644)
	write("b", "same", 0o644)
	state := filepath.Join(base, "state")
	os.Mkdir(state, 0o755)
	os.WriteFile(filepath.Join(state, "dupefs-mount.log"), []byte("an older dupefs' log\n"), 0o644)
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	// As mount.fuse runs it (mount.fuse3 may be missing here).
	cmd := exec.Command(bin, tree, mnt, "-o", "ro,db="+filepath.Join(state, "index.db"))
	out, err := cmd.CombinedOutput()
	t.Cleanup(func() {
		if isMounted(mnt) {
			syscall.Unmount(mnt, 0)
			waitFor(t, 10*time.Second, "the background process to end", func() bool { return daemonOf(mnt) == 0 })
		}
	})
	if err != nil {
		t.Fatalf("mount: %v\n%s", err, out)
	}
	waitIndexed(t, mnt)
	for _, name := range []string{"index.db", "index.db-wal", "index.db-shm", "dupefs-mount.log"} {
		fi, err := os.Stat(filepath.Join(state, name))
		if err == nil && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is mode %04o: other users read it", name, fi.Mode().Perm())
		}
	}
}

// make install puts the binary, the man page, the completions and the
// units under DESTDIR; make deb builds a package dpkg lists, installs into
// a scratch root with a working dupefs --version, and removes whole.
func TestInstallAndDeb(t *testing.T) {
	for _, tool := range []string{"make", "dpkg-deb", "dpkg"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing", tool)
		}
	}
	dest := t.TempDir()
	if out, err := exec.Command("make", "-C", "..", "install", "DESTDIR="+dest).CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	var files []string
	filepath.Walk(dest, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			files = append(files, strings.TrimPrefix(p, dest))
		}
		return nil
	})
	slices.Sort(files)
	want := []string{"/usr/local/bin/dupefs", "/usr/local/lib/systemd/system/dupefs-mount@.service",
		"/usr/local/lib/systemd/user/dupefs-mount@.service", "/usr/local/share/bash-completion/completions/dupefs",
		"/usr/local/share/fish/vendor_completions.d/dupefs.fish", "/usr/local/share/man/man1/dupefs.1.gz",
		"/usr/local/share/zsh/site-functions/_dupefs"}
	if !slices.Equal(files, want) {
		t.Errorf("make install wrote %q, want %q", files, want)
	}
	unit := readFile(filepath.Join(dest, "usr/local/lib/systemd/user/dupefs-mount@.service"))
	if !strings.Contains(unit, "ExecStart=/usr/local/bin/dupefs mount") {
		t.Errorf("the user unit does not run the installed binary:\n%s", unit)
	}
	if out, err := exec.Command("sh", "-c", "zcat "+dest+"/usr/local/share/man/man1/dupefs.1.gz | grep -c '^.SH'").Output(); err != nil ||
		len(strings.TrimSpace(string(out))) < 2 { // a section per command, and more
		t.Errorf("man page sections: %s %v", out, err)
	}
	if out, err := exec.Command("bash", "-c", "source "+dest+"/usr/local/share/bash-completion/completions/dupefs && "+
		"COMP_WORDS=(dupefs fol); COMP_CWORD=1; _dupefs; echo ${COMPREPLY[@]}").CombinedOutput(); err != nil ||
		strings.TrimSpace(string(out)) != "folders" {
		t.Errorf("bash completion of 'dupefs fol': %q %v", out, err)
	}

	// make deb.
	out, err := exec.Command("make", "-C", "..", "deb").CombinedOutput()
	if err != nil {
		t.Fatalf("make deb: %v\n%s", err, out)
	}
	debs, _ := filepath.Glob("../bin/dupefs_*.deb")
	if len(debs) == 0 {
		t.Fatalf("no package built:\n%s", out)
	}
	slices.Sort(debs)
	deb := debs[len(debs)-1]
	list, err := exec.Command("dpkg", "-c", deb).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"./usr/bin/dupefs", "./usr/share/man/man1/dupefs.1.gz", "./usr/lib/systemd/user/dupefs-mount@.service",
		"./usr/lib/systemd/system/dupefs-mount@.service", "./usr/share/bash-completion/completions/dupefs",
		"./usr/share/zsh/vendor-completions/_dupefs", "./usr/share/fish/vendor_completions.d/dupefs.fish",
		"./usr/share/doc/dupefs/copyright"} {
		if !strings.Contains(string(list), f+"\n") {
			t.Errorf("dpkg -c lacks %s:\n%s", f, list)
		}
	}
	info, _ := exec.Command("dpkg", "-I", deb).Output()
	for _, s := range []string{"Depends: fuse3", "Recommends: ffmpeg, btrfs-progs"} {
		if !strings.Contains(string(info), s) {
			t.Errorf("dpkg -I lacks %q:\n%s", s, info)
		}
	}
	// Into a scratch root: installed, working, removed whole. dpkg wants
	// ldconfig and start-stop-daemon on PATH even then: a user's PATH
	// lacks the sbin folders.
	dpkg := func(args ...string) *exec.Cmd {
		cmd := exec.Command("dpkg", args...)
		cmd.Env = append(os.Environ(), "PATH="+os.Getenv("PATH")+":/usr/local/sbin:/usr/sbin:/sbin")
		return cmd
	}
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "var/lib/dpkg/info"), 0o755)
	os.MkdirAll(filepath.Join(root, "var/lib/dpkg/updates"), 0o755)
	os.WriteFile(filepath.Join(root, "var/lib/dpkg/status"), nil, 0o644)
	if out, err := dpkg("--root="+root, "--force-depends", "--force-not-root", "-i", deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg -i: %v\n%s", err, out)
	}
	ver, err := exec.Command(filepath.Join(root, "usr/bin/dupefs"), "--version").Output()
	if err != nil || !strings.HasPrefix(string(ver), "dupefs version ") || !strings.Contains(string(ver), "commit ") {
		t.Errorf("dupefs --version: %q %v", ver, err)
	}
	if out, err := dpkg("--root="+root, "--force-not-root", "-r", "dupefs").CombinedOutput(); err != nil {
		t.Fatalf("dpkg -r: %v\n%s", err, out)
	}
	var left []string
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && !strings.Contains(p, "/var/lib/dpkg/") {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("dpkg -r left %q", left)
	}
}
