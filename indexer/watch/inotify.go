package watch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store/naming"
)

// errUnwatched: a root could not be watched whole.
var errUnwatched = errors.New("cannot be watched whole")

// inotify watches every folder of each root with a watch of its own (no
// root needed); its state is a path per watched folder.
type inotify struct {
	f    *os.File
	fd   int
	out  chan<- change
	skip func(string) bool
	done chan struct{}

	mu    sync.Mutex
	wds   map[int32]string
	paths map[string]int32
	roots map[string]bool
	full  map[string]bool // roots not fully watched (the limit)
}

const inotifyMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE |
	unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

func newInotify(out chan<- change, skip func(string) bool) (*inotify, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, &os.SyscallError{Syscall: "inotify_init1", Err: err}
	}
	in := &inotify{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, out: out, skip: skip, done: make(chan struct{}),
		wds: map[int32]string{}, paths: map[string]int32{}, roots: map[string]bool{}, full: map[string]bool{}}
	go in.read()
	return in, nil
}

func (in *inotify) name() string { return "inotify" }

func (in *inotify) add(root string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.roots[root] = true
	if in.full[root] {
		return errUnwatched
	}
	if err := in.addTree(root); err != nil {
		in.full[root] = true
		return err
	}
	return nil
}

// addTree watches dir and every folder below it (mu held). It stops at
// the watch limit with errUnwatched.
func (in *inotify) addTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone, or unreadable: its parent's events cover it
		}
		if !d.IsDir() {
			return nil
		}
		if in.skip(p) {
			return filepath.SkipDir
		}
		if _, ok := in.paths[p]; ok && p != dir {
			return nil
		}
		wd, err := unix.InotifyAddWatch(in.fd, p, inotifyMask)
		switch {
		case err == unix.ENOSPC:
			return errUnwatched // the limit of watches
		case err != nil:
			return nil
		}
		if old, ok := in.wds[int32(wd)]; ok && old != p {
			delete(in.paths, old) // the same folder under a new name
		}
		in.wds[int32(wd)], in.paths[p] = p, int32(wd)
		return nil
	})
}

// removeTree drops the watches of dir and the folders below it (mu held).
func (in *inotify) removeTree(dir string) {
	for p, wd := range in.paths {
		if naming.Within(dir, p) {
			unix.InotifyRmWatch(in.fd, uint32(wd))
			delete(in.paths, p)
			delete(in.wds, wd)
		}
	}
}

func (in *inotify) remove(root string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.roots, root)
	delete(in.full, root)
	in.removeTree(root)
}

// rootOf is the watched root holding p (mu held).
func (in *inotify) rootOf(p string) string {
	best := ""
	for r := range in.roots {
		if naming.Within(r, p) && len(r) > len(best) {
			best = r
		}
	}
	return best
}

func (in *inotify) read() {
	defer close(in.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := in.f.Read(buf)
		if err != nil {
			return // closed
		}
		for b := buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
			size := unix.SizeofInotifyEvent + int(ev.Len)
			if size > len(b) {
				break
			}
			name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:size]), "\x00")
			b = b[size:]
			in.event(ev.Wd, ev.Mask, name)
		}
	}
}

func (in *inotify) event(wd int32, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		in.out <- change{lost: true}
		return
	}
	in.mu.Lock()
	dir, ok := in.wds[wd]
	if mask&unix.IN_IGNORED != 0 {
		if ok && in.paths[dir] == wd {
			delete(in.paths, dir)
		}
		delete(in.wds, wd)
		in.mu.Unlock()
		return
	}
	if !ok || name == "" {
		in.mu.Unlock()
		return // an event of the folder itself: its parent has one too
	}
	p := naming.JoinPath(dir, name)
	var lost string
	if mask&unix.IN_ISDIR != 0 {
		switch {
		case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
			// A folder came: watch it and everything in it before its
			// parent is scanned, so nothing made in it is missed.
			if r := in.rootOf(p); r != "" && !in.full[r] {
				if err := in.addTree(p); err != nil {
					in.full[r] = true
					lost = r
				}
			}
		case mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
			in.removeTree(p)
		}
	}
	in.mu.Unlock()
	if lost != "" {
		in.out <- change{lost: true, root: lost}
	}
	if !in.skip(p) {
		in.out <- change{dir: dir}
	}
}

func (in *inotify) close() {
	in.f.Close()
	<-in.done
}
