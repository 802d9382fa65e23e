package indexer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
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

// spindles hands out one read token per rotating device.
type spindles struct {
	mode   Rotational
	sysfs  string                        // "/sys"; tests use a tree of their own
	notice func(dev uint64, name string) // told once per disk found rotating

	mu    sync.Mutex
	gates map[uint64]chan struct{} // nil: reads on the device are not limited
}

// acquire waits for the device's token when it rotates and returns the
// function that gives it back.
func (s *spindles) acquire(ctx context.Context, dev uint64) (func(), error) {
	g := s.gate(dev)
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

func (s *spindles) gate(dev uint64) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.gates[dev]; ok {
		return g
	}
	if s.gates == nil {
		s.gates = map[uint64]chan struct{}{}
	}
	var g chan struct{}
	name, spins := "", s.mode == RotationalYes
	if s.mode == RotationalAuto {
		name, spins = rotates(s.sysfs, dev)
	}
	if spins {
		g = make(chan struct{}, 1)
		if s.mode == RotationalAuto && s.notice != nil {
			s.notice(dev, name)
		}
	}
	s.gates[dev] = g
	return g
}

// rotates reports whether the block device dev (a file's st_dev) is a
// spinning disk, and its name. A device /sys does not know (btrfs and
// other file systems with an anonymous st_dev, network file systems) does
// not rotate as far as dupefs can tell.
func rotates(sysfs string, dev uint64) (string, bool) {
	link := filepath.Join(sysfs, "dev", "block", fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev)))
	dir, err := filepath.EvalSymlinks(link)
	if err != nil {
		return "", false
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		dir = filepath.Dir(dir) // a partition's queue is its disk's
	}
	return filepath.Base(dir), diskRotates(sysfs, dir, 0)
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
			if _, err := os.Stat(filepath.Join(d, "partition")); err == nil {
				d = filepath.Dir(d)
			}
			if diskRotates(sysfs, d, depth+1) {
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
