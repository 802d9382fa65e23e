package indexer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/indexer/mountinfo"
)

// On a spinning disk two large files read at once make the head seek
// between them at every chunk; one after the other each streams. So the
// hash run reads the large files of a disk that rotates one at a time (the
// prefix and small-file reads keep their depth: the disk's queue orders
// them). The disk says whether it rotates in
// /sys/dev/block/MAJ:MIN/queue/rotational, but a virtual disk says so
// whatever backs it: this project's virtio disk says 1, and there one
// reader took 10-17 s to index the photo tree cold where four took 5.6-6
// s. So virtio, Xen and Hyper-V disks count as not rotating, and a device
// mapper or RAID device rotates when one of the disks under it does.

// Rotational tells the indexer which disks rotate.
type Rotational int

const (
	RotationalAuto Rotational = iota // as /sys says, virtual disks excepted
	RotationalYes                    // every disk: one large read at a time per device
	RotationalNo                     // none
)

// ParseRotational reads auto, yes or no.
func ParseRotational(s string) (Rotational, error) {
	switch s {
	case "", "auto":
		return RotationalAuto, nil
	case "yes":
		return RotationalYes, nil
	case "no":
		return RotationalNo, nil
	}
	return 0, fmt.Errorf("want auto, yes or no, not %q", s)
}

// spindles hands out one read token per rotating disk.
type spindles struct {
	mode      Rotational
	sysfs     string                        // "/sys"; tests use a tree of their own
	mountinfo string                        // "/proc/self/mountinfo"
	notice    func(dev uint64, name string) // told once per disk found rotating

	mu    sync.Mutex
	gates map[uint64]chan struct{} // by st_dev; nil: reads are not limited
	disks map[string]chan struct{} // by disk: devices on one disk share its token
}

// acquire waits for the token of the device of the file at path (its
// st_dev is dev) when it rotates, and returns the function that gives it
// back.
func (s *spindles) acquire(ctx context.Context, dev uint64, path string) (func(), error) {
	g := s.gate(dev, path)
	if g == nil {
		return func() {}, nil
	}
	select {
	case g <- struct{}{}:
		return func() { <-g }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// rotating reports whether the file at path (its st_dev is dev) is on a
// rotating disk, whose reads acquire takes one at a time.
func (s *spindles) rotating(dev uint64, path string) bool { return s.gate(dev, path) != nil }

func (s *spindles) gate(dev uint64, path string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.gates[dev]; ok {
		return g
	}
	if s.gates == nil {
		s.gates, s.disks = map[uint64]chan struct{}{}, map[string]chan struct{}{}
	}
	var g chan struct{}
	name, spins := "", s.mode == RotationalYes
	if s.mode == RotationalAuto {
		name, spins = rotates(s.sysfs, s.mountinfo, dev, path)
	}
	if spins {
		disk := name
		if disk == "" {
			disk = fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
		}
		if g = s.disks[disk]; g == nil {
			g = make(chan struct{}, 1)
			s.disks[disk] = g
			if s.mode == RotationalAuto && s.notice != nil {
				s.notice(dev, name)
			}
		}
	}
	s.gates[dev] = g
	return g
}

// rotates reports whether the block device dev (the st_dev of the file at
// path) is a spinning disk, and its name. btrfs gives its files an
// anonymous device of its own (not even the one the mount table shows);
// then the mount that holds path names, in the mount table (mountinfo, ""
// not to look), the block device the file system was mounted from. A
// device neither knows (network file systems, tmpfs) does not rotate as
// far as dupefs can tell.
func rotates(sysfs, mountinfo string, dev uint64, path string) (string, bool) {
	link := filepath.Join(sysfs, "dev", "block", fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev)))
	dir, err := filepath.EvalSymlinks(link)
	if err != nil {
		var st unix.Stat_t
		src := mountSource(mountinfo, path)
		if src != "" && unix.Stat(src, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK && st.Rdev != dev {
			return rotates(sysfs, "", st.Rdev, "")
		}
		return "", false
	}
	dir = diskOf(dir)
	return filepath.Base(dir), diskRotates(sysfs, dir, 0)
}

// diskOf returns the /sys folder of the disk of the block device whose
// folder is dir: a partition's queue is its disk's.
func diskOf(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		return filepath.Dir(dir)
	}
	return dir
}

// mountSource returns the source of the innermost mount holding path in
// the mountinfo file, or "".
func mountSource(table, path string) string {
	if table == "" || path == "" {
		return ""
	}
	ms, err := mountinfo.ReadFile(table)
	if err != nil {
		return ""
	}
	m, _ := mountinfo.Holding(ms, path)
	return m.Source
}

// diskRotates reads the rotational flag of the disk whose /sys folder is
// dir.
func diskRotates(sysfs, dir string, depth int) bool {
	if depth > 8 {
		return false
	}
	if under, _ := os.ReadDir(filepath.Join(dir, "slaves")); len(under) > 0 {
		for _, u := range under {
			d, err := filepath.EvalSymlinks(filepath.Join(dir, "slaves", u.Name()))
			if err != nil {
				continue
			}
			if diskRotates(sysfs, diskOf(d), depth+1) {
				return true
			}
		}
		return false
	}
	rel, _ := filepath.Rel(sysfs, dir)
	for _, virtual := range []string{"/virtio", "/xen", "/vbd-", "/VMBUS"} {
		if strings.Contains("/"+rel, virtual) {
			return false
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "queue", "rotational"))
	return err == nil && strings.TrimSpace(string(b)) == "1"
}
