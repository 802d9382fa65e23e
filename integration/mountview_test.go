package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
)

func TestMountShowsTheTrueGroups(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	want := trickyTree(t, dir)
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	db := filepath.Join(base, "index.db")
	p := startMount(t, db, mnt, dir)
	st := waitIndexed(t, mnt)
	if st.Totals.Groups != len(want) {
		t.Errorf("status.json counts %d groups, want %d", st.Totals.Groups, len(want))
	}
	if got := mountedGroups(t, mnt, dir); !equalGroups(got, want) {
		t.Fatalf("/by-hash:\n got  %q\n want %q", got, want)
	}

	// /by-size agrees: every link points at a group folder of that size.
	sizes, _ := os.ReadDir(filepath.Join(mnt, "by-size"))
	n := 0
	for _, s := range sizes {
		size, _ := strconv.ParseInt(s.Name(), 10, 64)
		links, _ := os.ReadDir(filepath.Join(mnt, "by-size", s.Name()))
		for _, l := range links {
			n++
			target, _ := os.Readlink(filepath.Join(mnt, "by-size", s.Name(), l.Name()))
			if target != "../../by-hash/"+l.Name() {
				t.Errorf("by-size link %s -> %s", l.Name(), target)
			}
			copies, err := os.ReadDir(filepath.Join(mnt, "by-size", s.Name(), l.Name()))
			if err != nil || len(copies) < 2 {
				t.Errorf("through %s/%s: %v %v", s.Name(), l.Name(), copies, err)
				continue
			}
			fi, err := os.Stat(filepath.Join(mnt, "by-size", s.Name(), l.Name(), copies[0].Name()))
			if err != nil || fi.Size() != size {
				t.Errorf("a copy in /by-size/%s is %v bytes (%v)", s.Name(), fi, err)
			}
		}
	}
	if n != len(want) {
		t.Errorf("/by-size lists %d groups, want %d", n, len(want))
	}

	// Real clients.
	out, err := sh(t, "find "+mnt+" -type l -print0 | tr -cd '\\0' | wc -c") // names may hold newlines
	links := 0
	for _, g := range want {
		links += len(g)
	}
	// Each copy in /by-hash and in /files, each group in /by-size.
	if strings.TrimSpace(out) != strconv.Itoa(2*links+len(want)) || err != nil {
		t.Errorf("find -type l: %q (%v), want %d", out, err, 2*links+len(want))
	}
	big := filepath.Join(mnt, "by-hash")
	groupDir := ""
	keys, _ := os.ReadDir(big)
	for _, k := range keys {
		if names, _ := os.ReadDir(filepath.Join(big, k.Name())); len(names) == 2 && strings.HasSuffix(names[0].Name(), ".bin") {
			groupDir = filepath.Join(big, k.Name())
		}
	}
	if groupDir == "" {
		t.Fatal("the big/*.bin group is not mounted")
	}
	if out, err := sh(t, "ls -l "+groupDir); err != nil || strings.Count(out, " -> "+dir+"/big/") != 2 {
		t.Errorf("ls -l: %v\n%s", err, out)
	}
	if out, err := sh(t, "readlink "+groupDir+"/a.bin"); err != nil || strings.TrimSpace(out) != dir+"/big/a.bin" {
		t.Errorf("readlink: %q %v", out, err)
	}
	// st_ino from stat equals d_ino from the listing (ls -i).
	out1, _ := sh(t, "ls -i "+big+" | head -1")
	if f := strings.Fields(out1); len(f) == 2 {
		out2, _ := sh(t, "stat -c %i "+filepath.Join(big, f[1]))
		if strings.TrimSpace(out2) != f[0] {
			t.Errorf("d_ino %s, st_ino %s", f[0], out2)
		}
	} else {
		t.Errorf("ls -i: %q", out1)
	}
	dest := filepath.Join(base, "rsynced")
	if out, err := sh(t, "rsync -aL "+groupDir+"/ "+dest+"/"); err != nil {
		t.Fatalf("rsync -aL: %v\n%s", err, out)
	}
	orig, _ := os.ReadFile(filepath.Join(dir, "big/a.bin"))
	for _, n := range []string{"a.bin", "b.bin"} {
		if b, err := os.ReadFile(filepath.Join(dest, n)); err != nil || !bytes.Equal(b, orig) {
			t.Errorf("rsync copied %s wrong: %v", n, err)
		}
	}
	if out, err := sh(t, "cp "+groupDir+"/a.bin "+filepath.Join(base, "cp.bin")+" && cmp "+filepath.Join(base, "cp.bin")+" "+dir+"/big/a.bin"); err != nil {
		t.Errorf("cp: %v %s", err, out)
	}
	for _, w := range []string{"touch " + groupDir + "/new", "mkdir " + mnt + "/x", "rm " + groupDir + "/a.bin",
		"echo x > " + mnt + "/status.json", "mv " + groupDir + "/a.bin " + groupDir + "/c.bin"} {
		if out, err := sh(t, w); err == nil || !strings.Contains(out, "Read-only file system") {
			t.Errorf("%s: %v %q, want a read-only error", w, err, out)
		}
	}
	if m, _ := sh(t, "grep ' "+mnt+" ' /proc/mounts"); !strings.Contains(m, "dupefs "+mnt+" fuse.dupefs ro,nosuid,nodev") {
		t.Errorf("/proc/mounts: %q", m)
	}
	if took := p.stop(t); took > 10*time.Second {
		t.Errorf("SIGTERM took %v", took)
	}
	if isMounted(mnt) {
		t.Fatal("mount left after SIGTERM")
	}
}

func TestMountShowsWhatAnotherProcessIndexes(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	content := bytes.Repeat([]byte("duplicate me "), 1000)
	os.WriteFile(filepath.Join(dir, "a/one"), content, 0o644)
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	startMount(t, db, mnt, "--no-index")
	if g := mountedGroups(t, mnt, dir); len(g) != 0 {
		t.Fatalf("groups before the copy: %q", g)
	}
	// A copy arrives and a separate `dupefs index` records it.
	os.MkdirAll(filepath.Join(dir, "b"), 0o755)
	os.WriteFile(filepath.Join(dir, "b/copy"), content, 0o644)
	start := time.Now()
	mustRun(t, db, "index")
	waitFor(t, 10*time.Second, "the new group in the mounted view", func() bool {
		g, err := readGroups(mnt, dir)
		return err == nil && len(g) == 1 && len(g[0]) == 2
	})
	t.Logf("the group showed %v after the index process started", time.Since(start).Round(time.Millisecond))
	// The copy goes away: the group disappears without a remount.
	os.Remove(filepath.Join(dir, "b/copy"))
	mustRun(t, db, "index")
	waitFor(t, 10*time.Second, "the broken group to go", func() bool { g, err := readGroups(mnt, dir); return err == nil && len(g) == 0 })
}

func TestMountStopsCleanly(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	dupTree(t, dir, 300, 3)
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	db := filepath.Join(base, "index.db")

	// SIGTERM while a process holds its working directory in the mount:
	// a lazy detach, the process ends within 10s, nothing stays mounted.
	p := startMount(t, db, mnt, dir)
	waitIndexed(t, mnt)
	holder := exec.Command("sleep", "60")
	holder.Dir = filepath.Join(mnt, "by-hash")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	if took := p.stop(t); took > 10*time.Second {
		t.Errorf("SIGTERM of a busy mount took %v", took)
	}
	if isMounted(mnt) {
		t.Fatalf("mount left after SIGTERM of a busy mount:\n%s", p.stderr)
	}
	holder.Process.Kill()
	testenv.WaitCmd(t, holder, 10*time.Second)

	// kill -9 leaves a stale mount; the next mount clears it and works.
	p = startMount(t, db, mnt, dir)
	p.kill(t)
	if !isMounted(mnt) {
		t.Fatal("kill -9 left no mount behind; this test needs it to")
	}
	if _, err := os.Stat(filepath.Join(mnt, "by-hash")); err == nil {
		t.Fatal("the mount of a killed process still answers")
	}
	p = startMount(t, db, mnt, dir)
	waitIndexed(t, mnt)
	if !strings.Contains(p.stderr.String(), "stale") {
		t.Errorf("no word about the stale mount:\n%s", p.stderr)
	}
	if g := mountedGroups(t, mnt, dir); len(g) == 0 {
		t.Fatal("no groups in the new mount")
	}
	p.stop(t)
	if isMounted(mnt) {
		t.Fatal("mount left after SIGTERM")
	}
}

func TestMountRefusesBadMountPoints(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	os.MkdirAll(filepath.Join(dir, "inside"), 0o755)
	db := filepath.Join(base, "index.db")
	cases := map[string][]string{
		"inside a root":   {"mount", filepath.Join(dir, "inside"), dir},
		"over a root":     {"mount", base, dir},
		"missing folder":  {"mount", filepath.Join(base, "nope")},
		"a file":          {"mount", "/etc/hostname"},
		"no mount point":  {"mount"},
		"negative rescan": {"mount", "--rescan-every", "-1s", base},
	}
	for name, args := range cases {
		r := dupefs(t, db, args...)
		want := exitMount
		if name == "no mount point" || name == "negative rescan" {
			want = exitUsage
		}
		if r.code != want {
			t.Errorf("%s: exit %d, want %d\n%s", name, r.code, want, r.stderr)
		}
		if isMounted(args[len(args)-1]) {
			t.Fatalf("%s: mounted", name)
		}
	}
}
