package integration

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A person opens the mount in a file manager, as a new user would: pcmanfm
// (Debian's) under Xvfb opens /files, its window named after the folder;
// Home and Return open the first folder, the largest group, the window then
// named after its label. A screenshot of each goes to the test's artifact
// directory (go test -artifacts -outputdir DIR keeps them; make test keeps
// them in build/test-artifacts) for a person to look at. Skipped where no
// display server can be started.
func TestFileManagerOpensFiles(t *testing.T) {
	for _, tool := range []string{"pcmanfm", "xdotool", "import"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing (Debian packages pcmanfm, xdotool, imagemagick; .ci/run installs them)", tool)
		}
	}
	display := startXvfb(t)
	base := t.TempDir()
	tree := filepath.Join(base, "home")
	write := func(rel string, data []byte) {
		p := filepath.Join(tree, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	photo := bytes.Repeat([]byte("photo "), 110600/6)
	write("Pictures/2023/IMG_0002.jpg", photo)
	write("Pictures/2024/IMG_0002.jpg", photo)
	write("backup/Pictures/IMG_0002.jpg", photo)
	write("Documents/notes.txt", []byte("notes"))
	write("backup/Documents/notes.txt", []byte("notes"))
	db := filepath.Join(base, "index.db")
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	startMount(t, db, mnt, tree, "--no-thumbs")
	waitIndexed(t, mnt)
	first := "1 · IMG_0002.jpg (3 copies, 110.6 KB)"

	env := append(os.Environ(), "DISPLAY="+display, "HOME="+filepath.Join(base, "user"),
		"XDG_CONFIG_HOME="+filepath.Join(base, "user", ".config"), "XDG_RUNTIME_DIR="+filepath.Join(base, "run"),
		"NO_AT_BRIDGE=1")
	os.MkdirAll(filepath.Join(base, "run"), 0o700)
	fm := exec.Command("pcmanfm", "--no-desktop", "-n", filepath.Join(mnt, "files"))
	fm.Env = env
	fmLog, err := os.Create(filepath.Join(base, "pcmanfm.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer fmLog.Close()
	fm.Stdout, fm.Stderr = fmLog, fmLog
	if err := fm.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { fm.Wait(); close(done) }()
	t.Cleanup(func() {
		fm.Process.Kill()
		<-done
	})
	xdo := func(args ...string) (string, error) {
		c := exec.Command("xdotool", args...)
		c.Env = env
		out, err := c.Output()
		return strings.TrimSpace(string(out)), err
	}
	// Its window, on /files.
	var win string
	waitFor(t, 30*time.Second, "pcmanfm's window on /files", func() bool {
		ids, _ := xdo("search", "--onlyvisible", "--class", "pcmanfm")
		for _, id := range strings.Fields(ids) {
			if name, _ := xdo("getwindowname", id); name == "files" {
				win = id
				return true
			}
		}
		return false
	})
	shot := func(name string) {
		p := filepath.Join(t.ArtifactDir(), name)
		c := exec.Command("import", "-window", "root", p)
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("screenshot: %v %s", err, out)
		}
	}
	// The first folder by name is the largest group: open it. The
	// screen is taken before each try: the last shows /files as the key
	// that opened the group found it.
	waitFor(t, 30*time.Second, "pcmanfm to open "+first, func() bool {
		if _, err := xdo("windowfocus", "--sync", win); err != nil {
			return false
		}
		shot("files.png")
		xdo("key", "Home", "Return")
		name, _ := xdo("getwindowname", win)
		return name == first
	})
	shot("group.png")
	t.Logf("screens: %s (files.png, group.png)", t.ArtifactDir())
	select {
	case <-done:
		log, _ := os.ReadFile(fmLog.Name())
		t.Errorf("pcmanfm ended:\n%s", log)
	default:
	}
}

// startXvfb starts a display server on a free display and returns its
// name (":N"); Cleanup stops it. The test is skipped when none can start.
func startXvfb(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("Xvfb"); err != nil {
		t.Skip("no display server: Xvfb is missing (Debian package xvfb; .ci/run installs it)")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	x := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", "1024x768x24", "-nolisten", "tcp")
	x.ExtraFiles = []*os.File{w}
	var out bytes.Buffer
	x.Stdout, x.Stderr = &out, &out
	if err := x.Start(); err != nil {
		t.Skipf("no display server: Xvfb: %v", err)
	}
	w.Close()
	done := make(chan struct{})
	go func() { x.Wait(); close(done) }()
	t.Cleanup(func() {
		x.Process.Kill()
		<-done
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		r.Close()
		line <- strings.TrimSpace(s)
	}()
	select {
	case n := <-line:
		if n == "" {
			t.Skipf("no display server: Xvfb did not start:\n%s", out.String())
		}
		return ":" + n
	case <-time.After(30 * time.Second):
		t.Skipf("no display server: Xvfb did not start in 30 s:\n%s", out.String())
	}
	return ""
}
