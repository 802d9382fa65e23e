package indexer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/store"
)

// fakeSys builds a /sys with the block devices given: "MAJ:MIN" -> the
// device's folder under /sys/devices, its rotational flag ("" for a
// partition, whose disk is the parent folder) and the folders of the
// devices under it (device mapper, RAID).
type fakeDev struct {
	path   string
	rot    string
	slaves []string // paths of other devices
}

func fakeSys(t *testing.T, devs map[string]fakeDev) string {
	t.Helper()
	sys := t.TempDir()
	for num, d := range devs {
		dir := filepath.Join(sys, "devices", d.path)
		if err := os.MkdirAll(filepath.Join(dir, "queue"), 0o755); err != nil {
			t.Fatal(err)
		}
		if d.rot == "" {
			os.WriteFile(filepath.Join(dir, "partition"), []byte("1\n"), 0o644)
		} else {
			os.WriteFile(filepath.Join(dir, "queue", "rotational"), []byte(d.rot+"\n"), 0o644)
		}
		for _, s := range d.slaves {
			os.MkdirAll(filepath.Join(dir, "slaves"), 0o755)
			if err := os.Symlink(filepath.Join(sys, "devices", s), filepath.Join(dir, "slaves", filepath.Base(s))); err != nil {
				t.Fatal(err)
			}
		}
		os.MkdirAll(filepath.Join(sys, "dev", "block"), 0o755)
		if err := os.Symlink(dir, filepath.Join(sys, "dev", "block", num)); err != nil {
			t.Fatal(err)
		}
	}
	return sys
}

func TestRotatesReadsSysLikeTheKernelWritesIt(t *testing.T) {
	sata := "pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sdb"
	sys := fakeSys(t, map[string]fakeDev{
		"8:16":    {path: sata, rot: "1"},
		"8:17":    {path: sata + "/sdb1"},
		"259:0":   {path: "pci0000:00/0000:00:1d.0/nvme/nvme0/nvme0n1", rot: "0"},
		"254:0":   {path: "pci0000:00/0000:00:02.0/virtio1/block/vda", rot: "1"},
		"202:0":   {path: "vbd-51712/block/xvda", rot: "1"},
		"253:0":   {path: "virtual/block/dm-0", rot: "0", slaves: []string{sata + "/sdb1"}},
		"253:1":   {path: "virtual/block/dm-1", rot: "0", slaves: []string{"pci0000:00/0000:00:1d.0/nvme/nvme0/nvme0n1"}},
		"7:3":     {path: "virtual/block/loop3", rot: "1"},
		"9:0":     {path: "virtual/block/md0", rot: "0", slaves: []string{"virtual/block/loop3"}},
		"8:32":    {path: "pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block/sdc", rot: "0"},
		"254:16":  {path: "pci0000:00/0000:00:05.0/virtio4/host1/target1:0:0/1:0:0:0/block/sdd", rot: "1"},
		"252:100": {path: "LNXSYSTM:00/VMBUS:00/vmbus_10/host2/target2:0:0/2:0:0:0/block/sde", rot: "1"},
	})
	for _, c := range []struct {
		dev  string
		name string
		want bool
	}{
		{"8:16", "sdb", true},
		{"8:17", "sdb", true}, // a partition: its disk's flag
		{"259:0", "nvme0n1", false},
		{"254:0", "vda", false},   // virtio says 1 whatever backs it
		{"202:0", "xvda", false},  // Xen too
		{"254:16", "sdd", false},  // a disk behind virtio-scsi
		{"252:100", "sde", false}, // Hyper-V
		{"253:0", "dm-0", true},   // device mapper over a spinning disk
		{"253:1", "dm-1", false},
		{"7:3", "loop3", true}, // a loop device says what its backing says
		{"9:0", "md0", true},
		{"8:32", "sdc", false},
		{"0:45", "", false}, // btrfs's anonymous device: unknown
	} {
		var maj, min uint32
		fmt.Sscanf(c.dev, "%d:%d", &maj, &min)
		name, got := rotates(sys, "", unix.Mkdev(maj, min), "")
		if got != c.want || name != c.name {
			t.Errorf("%s: rotates = %q %v, want %q %v", c.dev, name, got, c.name, c.want)
		}
	}
}

// A btrfs file's device is anonymous (0:N, and not the one the mount
// table shows): the mount holding the file's path names the block device
// the file system was mounted from, and that one's flag counts.
func TestRotatesFollowsTheMountTableForAnonymousDevices(t *testing.T) {
	testenv.NeedRoot(t, "makes a block device node (mknod)")
	sata := "pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sdb"
	sys := fakeSys(t, map[string]fakeDev{"8:16": {path: sata, rot: "1"}, "8:17": {path: sata + "/sdb1"}})
	node := filepath.Join(t.TempDir(), "sdb1")
	if err := unix.Mknod(node, unix.S_IFBLK|0o600, int(unix.Mkdev(8, 17))); err != nil {
		t.Fatal(err)
	}
	mountinfo := filepath.Join(t.TempDir(), "mountinfo")
	os.WriteFile(mountinfo, []byte("22 27 0:21 / /proc rw,relatime - proc proc rw\n"+
		"91 27 0:45 / /mnt/photos rw,relatime shared:40 - btrfs "+node+" rw,space_cache=v2,subvolid=5,subvol=/\n"+
		"92 91 0:46 / /mnt/photos/nas rw,relatime - nfs4 nas:/export rw\n"+
		"93 27 0:47 / /mnt/my\\040disk rw,relatime - btrfs "+node+" rw\n"), 0o644)
	for _, c := range []struct {
		path string
		name string
		want bool
	}{
		{"/mnt/photos/2024/a.jpg", "sdb", true},
		{"/mnt/photos/nas/a.jpg", "", false}, // the innermost mount: NFS
		{"/mnt/my disk/a.jpg", "sdb", true},  // a mount point with a space
		{"/srv/a.jpg", "", false},            // not on any of those
	} {
		// The file's own device is one /sys does not know.
		if name, got := rotates(sys, mountinfo, unix.Mkdev(0, 48), c.path); got != c.want || name != c.name {
			t.Errorf("%s: rotates = %q %v, want %q %v", c.path, name, got, c.name, c.want)
		}
	}
}

// The hash run reads the large files of a rotating disk one at a time,
// and several at once elsewhere; the user is told once which disk
// rotates.
func TestHashRunReadsOneLargeFileAtATimePerRotatingDisk(t *testing.T) {
	for _, c := range []struct {
		name    string
		mode    Rotational
		rot     string // the flag of the tree's disk in the fake /sys
		serial  bool
		notices int
	}{
		{"auto, a rotating disk", RotationalAuto, "1", true, 1},
		{"auto, a solid-state disk", RotationalAuto, "0", false, 0},
		{"yes", RotationalYes, "0", true, 0},
		{"no", RotationalNo, "1", false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			var st unix.Stat_t
			if err := unix.Stat(e.dir, &st); err != nil {
				t.Fatal(err)
			}
			sys := fakeSys(t, map[string]fakeDev{
				fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)): {path: "pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sdz", rot: c.rot},
			})
			// Eight files, pairs of four sizes, each pair equal at both
			// ends: every one needs a full read, and the pairs are read
			// as four sets (side by side within a set, and sets at once
			// unless the disk rotates).
			for i := range 8 {
				b := bytes.Repeat([]byte{'x'}, 3*SmallFile+i/2)
				b[SmallFile+i] = 'y'
				os.WriteFile(filepath.Join(e.dir, fmt.Sprintf("f%d", i)), b, 0o644)
			}
			e.addRoot(store.RootSpec{})
			noEarlyReads(t) // the hash job's readers are under test
			cfg := e.config()
			cfg.Workers, cfg.IODepth, cfg.Rotational, cfg.sysfs = 2, 32, c.mode, sys
			var notices []string
			var mu sync.Mutex
			cfg.Notice = func(s string) { mu.Lock(); notices = append(notices, s); mu.Unlock() }
			ix := New(IndexOf(e.db), cfg)
			var inRead, most atomic.Int32
			ix.hook = func(stage, path string) {
				if stage != "read" {
					return
				}
				n := inRead.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				// Each read is held open a while, so that reads the
				// job would overlap do overlap: what is counted.
				time.Sleep(30 * time.Millisecond)
				inRead.Add(-1)
			}
			if err := ix.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if serial := most.Load() == 1; serial != c.serial {
				t.Errorf("at most %d large files read at once; want one at a time: %v", most.Load(), c.serial)
			}
			if len(notices) != c.notices {
				t.Errorf("notices %q, want %d", notices, c.notices)
			}
			if c.notices == 1 && !bytes.Contains([]byte(notices[0]), []byte("sdz rotates")) {
				t.Errorf("notice %q does not name the disk", notices[0])
			}
		})
	}
}

// Two partitions of one spinning disk share its token, and the disk is
// named once; another disk has a token of its own.
func TestPartitionsOfOneDiskShareItsToken(t *testing.T) {
	sata := "pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sdb"
	sata2 := "pci0000:00/0000:00:1f.2/ata2/host1/target1:0:0/1:0:0:0/block/sdc"
	sys := fakeSys(t, map[string]fakeDev{
		"8:16": {path: sata, rot: "1"}, "8:17": {path: sata + "/sdb1"}, "8:18": {path: sata + "/sdb2"},
		"8:32": {path: sata2, rot: "1"},
	})
	var named []string
	s := &spindles{mode: RotationalAuto, sysfs: sys, notice: func(_ uint64, name string) { named = append(named, name) }}
	b1, b2, c := s.gate(unix.Mkdev(8, 17), ""), s.gate(unix.Mkdev(8, 18), ""), s.gate(unix.Mkdev(8, 32), "")
	if b1 == nil || b1 != b2 || c == nil || c == b1 {
		t.Errorf("gates sdb1 %p, sdb2 %p, sdc %p: want sdb's shared, sdc's its own", b1, b2, c)
	}
	if len(named) != 2 || named[0] != "sdb" || named[1] != "sdc" {
		t.Errorf("named %q, want sdb then sdc", named)
	}
}
