package mountinfo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	line := `36 35 98:3 /mnt1 /mnt/with\040space rw,noatime master:1 - fuse.dupefs dupefs rw,user_id=0`
	m, ok := Parse(line)
	if !ok || m.Point != "/mnt/with space" || m.FSType != FSTypeDupefs || m.Source != "dupefs" || m.Dev != unix.Mkdev(98, 3) {
		t.Fatalf("parsed %+v %v", m, ok)
	}
	for _, bad := range []string{"garbage", "1 2 x:y / /a rw - ext4 /dev/a rw", "1 2 8:1 / - ext4"} {
		if m, ok := Parse(bad); ok {
			t.Errorf("%q parsed as %+v", bad, m)
		}
	}
	if got := unescape(`a\134b\012c\0`); got != "a\\b\nc\\0" {
		t.Errorf("unescape: %q", got)
	}
}

const table = `22 1 254:0 / / rw - ext4 /dev/vda rw
40 22 0:50 / /srv/nas rw - nfs4 nas:/export rw
41 22 0:51 / /media/usb rw - fuseblk /dev/sdb1 rw
42 22 0:52 / /home/u/remote rw - fuse.sshfs u@box:/ rw
43 22 0:53 / /srv/nas/inner rw - ext4 /dev/vdb rw
44 22 0:54 / /srv/nas rw - tmpfs tmpfs rw
`

func writeTable(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(p, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHolding(t *testing.T) {
	ms, err := ReadFile(writeTable(t))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/etc/passwd":        "/dev/vda",
		"/srv/nas/x":         "tmpfs", // the later mount on /srv/nas hides the nfs one
		"/srv/nas/inner/y":   "/dev/vdb",
		"/srv/nasty":         "/dev/vda",
		"/home/u/remote/a/b": "u@box:/",
		"/media/usb":         "/dev/sdb1",
	} {
		if m, ok := Holding(ms, path); !ok || m.Source != want {
			t.Errorf("Holding(%s) = %+v %v, want source %s", path, m, ok, want)
		}
	}
}

func TestClassify(t *testing.T) {
	tbl := writeTable(t)
	for _, c := range []struct {
		magic   int64
		dev     uint64
		want    FS
		comment string
	}{
		{0xef53, unix.Mkdev(254, 0), FS{}, "ext4"},
		{0x6969, unix.Mkdev(0, 50), FS{"nfs4", true}, "nfs named by the table"},
		{0x6969, unix.Mkdev(0, 99), FS{"nfs", true}, "nfs the table does not show"},
		{0xff534d42, unix.Mkdev(0, 99), FS{"cifs", true}, "cifs"},
		{fuseMagic, unix.Mkdev(0, 51), FS{"fuseblk", false}, "ntfs-3g on a disk"},
		{fuseMagic, unix.Mkdev(0, 52), FS{"fuse.sshfs", true}, "sshfs"},
		{fuseMagic, unix.Mkdev(0, 98), FS{"fuse", true}, "a FUSE mount the table does not show"},
		{int64(int32(-0x1acb2be)), unix.Mkdev(0, 99), FS{"smb2", true}, "smb2's magic as a signed 32-bit f_type"},
		{0x786f4256, unix.Mkdev(0, 99), FS{"vboxsf", true}, "a VirtualBox shared folder"},
		{int64(int32(-0x45345344)), unix.Mkdev(0, 99), FS{"vmhgfs", true}, "a VMware shared folder (kernel module)"},
		{0x7c7c6673, unix.Mkdev(0, 99), FS{"prl_fs", true}, "a Parallels shared folder"},
	} {
		got, err := classify(c.magic, c.dev, tbl)
		if err != nil || got != c.want {
			t.Errorf("%s: classify = %+v, %v; want %+v", c.comment, got, err, c.want)
		}
	}
	// No mount table (a chroot without /proc): what the magic says, and
	// FUSE counts as network.
	gone := filepath.Join(t.TempDir(), "mountinfo")
	for magic, want := range map[int64]FS{0x6969: {"nfs", true}, fuseMagic: {"fuse", true}, 0xef53: {}} {
		if got, err := classify(magic, unix.Mkdev(0, 50), gone); err != nil || got != want {
			t.Errorf("magic %#x without a table: classify = %+v, %v; want %+v", magic, got, err, want)
		}
	}
}

func TestNetworkType(t *testing.T) {
	for fstype, want := range map[string]bool{
		"nfs": true, "nfs4": true, "cifs": true, "smb3": true, "9p": true, "ceph": true, "virtiofs": true,
		"fuse": true, "fuse.sshfs": true, "fuse.rclone": true, "fuse.mergerfs": true, "fuse.gvfsd-fuse": true,
		"vboxsf": true, "fuse.vmhgfs-fuse": true, "prl_fs": true,
		"fuseblk": false, "ext4": false, "btrfs": false, "xfs": false, "tmpfs": false, "overlay": false, "zfs": false,
	} {
		if got := NetworkType(fstype); got != want {
			t.Errorf("NetworkType(%s) = %v, want %v", fstype, got, want)
		}
	}
}

func TestClassifyHere(t *testing.T) {
	// The test's own temporary folder: whatever it is on, Classify and
	// ClassifyPath agree, and the cache answers as they do.
	dir := t.TempDir()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byFD, err := Classify(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	byPath, err := ClassifyPath(dir)
	if err != nil || byPath != byFD {
		t.Fatalf("ClassifyPath = %+v, %v; Classify = %+v", byPath, err, byFD)
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	var c Cache
	for i := 0; i < 2; i++ {
		if got, err := c.Dev(st.Dev, dir); err != nil || got != byFD {
			t.Fatalf("Cache.Dev = %+v, %v", got, err)
		}
	}
	if _, err := c.Dev(st.Dev+1, filepath.Join(dir, "gone")); err == nil {
		t.Error("a file that is not there classified")
	}
}

// An overlay counts as network when this machine shows one of its layers
// at its own path (its files may be that folder's), and as local when it
// shows none (a container's root); the overlay found by mount ID, since a
// file of it may show a layer's device.
func TestOverlay(t *testing.T) {
	shown := t.TempDir()
	colon := filepath.Join(t.TempDir(), "a:b")
	if err := os.Mkdir(colon, 0o755); err != nil {
		t.Fatal(err)
	}
	esc := func(p string) string { return strings.ReplaceAll(p, ":", `\072`) }
	tbl := fmt.Sprintf(`26 1 254:0 / / rw - ext4 /dev/vda rw
50 26 0:60 / /srv/ovl rw - overlay overlay rw,lowerdir=/nowhere/l1:%s,upperdir=/nowhere/u,workdir=/nowhere/w
51 1 0:61 / / rw - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/NOPE:/var/lib/docker/overlay2/l/NADA,upperdir=/var/lib/docker/overlay2/x/diff,workdir=/var/lib/docker/overlay2/x/work
52 26 0:62 / /srv/ovl2 rw - overlay overlay rw,lowerdir=/nowhere/l1::/nowhere/data,upperdir=%s,workdir=/nowhere/w
53 26 0:63 / /srv/ovl3 rw - overlay overlay rw,lowerdir=%s
`, shown, esc(shown), esc(colon))
	ms, err := parse(strings.NewReader(tbl))
	if err != nil || len(ms) != 5 || ms[1].ID != 50 || !strings.HasPrefix(ms[1].Super, "rw,lowerdir=") {
		t.Fatalf("parsed %+v, %v", ms, err)
	}
	for _, c := range []struct {
		id      int
		dev     uint64
		want    FS
		byDev   bool
		comment string
	}{
		{50, unix.Mkdev(0, 60), FS{"overlay", true}, true, "a lower layer shown"},
		{50, unix.Mkdev(0, 64), FS{"overlay", true}, true, "a file showing the overlay's number for a layer"},
		{50, unix.Mkdev(254, 0), FS{"overlay", true}, false, "a file showing its layer's own device"},
		{51, unix.Mkdev(0, 61), FS{"overlay", false}, true, "a container's root: no layer shown"},
		{52, unix.Mkdev(0, 62), FS{"overlay", true}, true, "the upper layer shown, escaped"},
		{53, unix.Mkdev(0, 63), FS{"overlay", true}, true, "a layer whose path holds ':'"},
		{99, unix.Mkdev(0, 65), FS{"overlay", true}, false, "a mount the table does not show"},
	} {
		got, byDev := overlayFS(ms, c.id, c.dev)
		if got != c.want || byDev != c.byDev {
			t.Errorf("%s: overlayFS = %+v, %v; want %+v, %v", c.comment, got, byDev, c.want, c.byDev)
		}
	}
}

// A real overlay whose lower layer is a folder here: its files and
// folders classify as network, and the cache does not take the device a
// file of it shows (a layer's, when its layers are on two file systems)
// for the overlay's.
func TestClassifyOverlay(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts an overlay and a tmpfs")
	}
	base := t.TempDir()
	lower, tm, dir := filepath.Join(base, "lower"), filepath.Join(base, "tm"), filepath.Join(base, "ovl")
	for _, d := range []string{lower, tm, dir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(lower, "a"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", tm, "tmpfs", 0, ""); err != nil {
		t.Skipf("tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(tm, unix.MNT_DETACH) })
	for _, d := range []string{"u", "w"} {
		if err := os.Mkdir(filepath.Join(tm, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := "lowerdir=" + lower + ",upperdir=" + filepath.Join(tm, "u") + ",workdir=" + filepath.Join(tm, "w")
	if err := unix.Mount("overlay", dir, "overlay", 0, opts); err != nil {
		t.Skipf("overlay: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
			unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
	var c Cache
	for _, p := range []string{dir, filepath.Join(dir, "a")} {
		fs, err := ClassifyPath(p)
		if err != nil || fs != (FS{"overlay", true}) {
			t.Errorf("ClassifyPath(%s) = %+v, %v", p, fs, err)
		}
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		if fs, err := c.Dev(st.Dev, p); err != nil || !fs.Network {
			t.Errorf("Cache.Dev(%s) = %+v, %v", p, fs, err)
		}
	}
	for _, p := range []string{lower, filepath.Join(lower, "a")} {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		if fs, err := c.Dev(st.Dev, p); err != nil || fs.Network {
			t.Errorf("Cache.Dev(%s), after the overlay's files = %+v, %v", p, fs, err)
		}
	}
}

// An overlay mounted over its own lower layer hides it: with its upper
// layer hidden too (detached), no other path shows a file of it, and the
// overlay is local.
func TestClassifyOverlayOverItsLowerLayer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts an overlay and a tmpfs")
	}
	base := t.TempDir()
	lower, tm := filepath.Join(base, "data"), filepath.Join(base, "tm")
	for _, d := range []string{lower, tm} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("tmpfs", tm, "tmpfs", 0, ""); err != nil {
		t.Skipf("tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(tm, unix.MNT_DETACH) })
	for _, d := range []string{"u", "w"} {
		if err := os.Mkdir(filepath.Join(tm, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := "lowerdir=" + lower + ",upperdir=" + filepath.Join(tm, "u") + ",workdir=" + filepath.Join(tm, "w")
	if err := unix.Mount("overlay", lower, "overlay", 0, opts); err != nil {
		t.Skipf("overlay: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(lower, 0); err != nil {
			t.Errorf("unmount %s: %v", lower, err)
			unix.Unmount(lower, unix.MNT_DETACH)
		}
	})
	if fs, err := ClassifyPath(lower); err != nil || fs != (FS{"overlay", true}) {
		t.Errorf("its upper layer shown: ClassifyPath = %+v, %v; want network", fs, err)
	}
	if err := unix.Unmount(tm, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	if fs, err := ClassifyPath(lower); err != nil || fs != (FS{"overlay", false}) {
		t.Errorf("its layers hidden: ClassifyPath = %+v, %v; want local", fs, err)
	}
}
