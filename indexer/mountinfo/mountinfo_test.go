package mountinfo

import (
	"os"
	"path/filepath"
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
	} {
		got, err := classify(c.magic, c.dev, tbl)
		if err != nil || got != c.want {
			t.Errorf("%s: classify = %+v, %v; want %+v", c.comment, got, err, c.want)
		}
	}
}

func TestNetworkType(t *testing.T) {
	for fstype, want := range map[string]bool{
		"nfs": true, "nfs4": true, "cifs": true, "smb3": true, "9p": true, "ceph": true, "virtiofs": true,
		"fuse": true, "fuse.sshfs": true, "fuse.rclone": true, "fuse.mergerfs": true, "fuse.gvfsd-fuse": true,
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
