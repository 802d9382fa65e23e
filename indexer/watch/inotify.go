package watch

import (
	"errors"
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
// root needed); its state is a path per watched folder, and the watched
// subfolders of each, so a subtree's watches are dropped in one pass.
//
// Three goroutines share the work, so none waits on another's:
//   - the reader takes events off the kernel's queue, doing a few map
//     lookups for each; it never walks a folder and never waits on the
//     watcher, so the queue does not overflow while scans run;
//   - the adder watches the folders that came (and all below them), drops
//     the watches of folders moved away, and after an overflow watches
//     every folder of every root again. It adds a folder's watch before it
//     reads its listing, and names the folder for a scan after: whatever
//     is made in it is in that scan or raises an event of its own;
//   - the namer (backend.go) hands what changed to the watcher, one change
//     per folder however many events it had.
type inotify struct {
	f    *os.File
	fd   int
	out  chan<- change
	skip func(string) bool
	done chan struct{} // the reader ended
	quit chan struct{} // close was called
	wg   sync.WaitGroup

	mu      sync.Mutex
	wds     map[int32]string
	paths   map[string]int32
	kids    map[string]map[string]bool // a watched folder's watched subfolders
	roots   map[string]bool
	part    map[string]*limitHit // roots watched in part (the limit)
	todo    []inotifyOp          // the adder's work, in the order it came
	rewatch bool                 // an opRewatch waits in todo
	work    chan struct{}        // todo is not empty
	namer   *namer               // what changed, to the watcher
}

// inotifyOp is one task of the adder.
type inotifyOp struct {
	kind opKind
	path string
}

type opKind int

const (
	opWatch   opKind = iota // a folder came: watch it and all below it
	opDrop                  // a folder went away by a move: drop its watches
	opRewatch               // events were lost: watch every folder again
	opRetry                 // a root watched in part: try to watch it whole
)

// inotifyHooks let tests stand in for the kernel's limit and make the
// reader slow; their zero values use the kernel.
var inotifyHooks struct {
	addWatch func(fd int, path string, mask uint32) (int, error)
	limit    func() int
	event    func() // called by the reader before each event
	procSys  string // where /proc/sys is ("": /proc/sys)
}

func addWatch(fd int, path string, mask uint32) (int, error) {
	if f := inotifyHooks.addWatch; f != nil {
		return f(fd, path, mask)
	}
	return unix.InotifyAddWatch(fd, path, mask)
}

const inotifyMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE |
	unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

func newInotify(out chan<- change, skip func(string) bool) (*inotify, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, &os.SyscallError{Syscall: "inotify_init1", Err: err}
	}
	in := &inotify{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, out: out, skip: skip,
		done: make(chan struct{}), quit: make(chan struct{}),
		wds: map[int32]string{}, paths: map[string]int32{}, kids: map[string]map[string]bool{},
		roots: map[string]bool{}, part: map[string]*limitHit{},
		work: make(chan struct{}, 1), namer: newNamer(out)}
	in.wg.Add(1)
	go in.read()
	go in.adder()
	return in, nil
}

func (in *inotify) name() string { return "inotify" }

// add watches a root and every folder in it, before its scan reads them.
func (in *inotify) add(root string) error {
	in.mu.Lock()
	in.roots[root] = true
	in.mu.Unlock()
	if hit := in.watchTree(root, false, nil); hit != nil {
		in.mu.Lock()
		in.part[root] = hit
		in.mu.Unlock()
		return hit
	}
	return nil
}

func (in *inotify) remove(root string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.roots, root)
	delete(in.part, root)
	in.dropTree(root)
}

// retry tries again to watch a root watched in part.
func (in *inotify) retry(root string) { in.queue(inotifyOp{kind: opRetry, path: root}) }

// queue hands the adder a task; a rewatch already waiting covers
// another.
func (in *inotify) queue(o inotifyOp) {
	in.mu.Lock()
	if o.kind == opRewatch {
		if in.rewatch {
			in.mu.Unlock()
			return
		}
		in.rewatch = true
	}
	in.todo = append(in.todo, o)
	in.mu.Unlock()
	kick(in.work)
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

// bind records that wd watches p (mu held). A wd seen under another path
// is the same folder moved: its old path is forgotten.
func (in *inotify) bind(wd int32, p string) {
	if old, ok := in.wds[wd]; ok && old != p && in.paths[old] == wd {
		in.unlink(old)
	}
	in.wds[wd], in.paths[p] = p, wd
	parent := filepath.Dir(p)
	if in.kids[parent] == nil {
		in.kids[parent] = map[string]bool{}
	}
	in.kids[parent][p] = true
}

// unlink forgets the path p (mu held), not its wd.
func (in *inotify) unlink(p string) {
	delete(in.paths, p)
	parent := filepath.Dir(p)
	if k := in.kids[parent]; k != nil {
		delete(k, p)
		if len(k) == 0 {
			delete(in.kids, parent)
		}
	}
}

// ignored: the kernel dropped wd (its folder is gone, or it was removed).
// One lookup, whatever the number of watches (mu held).
func (in *inotify) ignored(wd int32) {
	p, ok := in.wds[wd]
	delete(in.wds, wd)
	if ok && in.paths[p] == wd {
		in.unlink(p)
	}
}

// dropTree removes the watches of dir and of the folders below it, in one
// pass over that subtree (mu held).
func (in *inotify) dropTree(dir string) {
	stack := []string{dir}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for k := range in.kids[p] {
			stack = append(stack, k)
		}
		delete(in.kids, p)
		if wd, ok := in.paths[p]; ok {
			unix.InotifyRmWatch(in.fd, uint32(wd))
			delete(in.wds, wd)
			delete(in.paths, p)
		}
	}
	in.unlink(dir)
}

// watchTree watches top and every folder below it, each before its
// listing is read; with announce, each folder watched is named to the
// watcher for a scan. seen, when set, collects the watches met. It stops
// adding at the limit and returns how far it got (counting on), nil when
// every folder is watched.
func (in *inotify) watchTree(top string, announce bool, seen map[int32]bool) *limitHit {
	in.mu.Lock()
	root := in.rootOf(top)
	in.mu.Unlock()
	if root == "" {
		return nil // no longer a root's
	}
	var hit *limitHit
	walked := 0
	stack := []string{top}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if in.skip(p) {
			continue
		}
		walked++
		if hit != nil {
			in.mu.Lock()
			if wd, ok := in.paths[p]; ok && seen != nil {
				seen[wd] = true
			}
			in.mu.Unlock()
		} else {
			wd, err := addWatch(in.fd, p, inotifyMask)
			switch {
			case err == unix.ENOSPC:
				hit = &limitHit{root: root}
				hit.limit, hit.knob = watchLimit()
			case err != nil:
				continue // gone, or unreadable: its parent's events cover it
			default:
				in.mu.Lock()
				in.bind(int32(wd), p)
				if seen != nil {
					seen[int32(wd)] = true
				}
				in.mu.Unlock()
				if announce {
					in.namer.name(p)
				}
			}
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() {
				stack = append(stack, naming.JoinPath(p, e.Name()))
			}
		}
	}
	if hit != nil {
		in.mu.Lock()
		for p := range in.paths {
			if naming.Within(top, p) {
				hit.watched++
			}
		}
		in.mu.Unlock()
		hit.folders = max(walked, hit.watched)
	}
	return hit
}

// note hands the watcher a change that is not a folder's.
func (in *inotify) note(c change) { in.namer.note(c) }

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

// event takes one event: a few lookups, never a walk and never a wait on
// the watcher.
func (in *inotify) event(wd int32, mask uint32, name string) {
	if f := inotifyHooks.event; f != nil {
		f()
	}
	if mask&unix.IN_Q_OVERFLOW != 0 {
		in.queue(inotifyOp{kind: opRewatch})
		return
	}
	in.mu.Lock()
	if mask&(unix.IN_IGNORED|unix.IN_MOVE_SELF) != 0 {
		// A root's own watch gone (the root removed) or moved with it:
		// the watcher looks at the root at once.
		if p, ok := in.wds[wd]; ok && in.roots[p] && in.paths[p] == wd {
			in.namer.note(change{root: p, moved: true})
		}
	}
	if mask&unix.IN_IGNORED != 0 {
		in.ignored(wd)
		in.mu.Unlock()
		return
	}
	dir, ok := in.wds[wd]
	if !ok || name == "" {
		in.mu.Unlock()
		return // an event of the folder itself: its parent has one too
	}
	p := naming.JoinPath(dir, name)
	work := false
	if mask&unix.IN_ISDIR != 0 {
		switch {
		case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
			in.todo = append(in.todo, inotifyOp{kind: opWatch, path: p})
			work = true
		case mask&unix.IN_MOVED_FROM != 0:
			in.todo = append(in.todo, inotifyOp{kind: opDrop, path: p})
			work = true
			// A folder deleted needs nothing: the kernel drops its watch
			// and says so with IN_IGNORED.
		case mask&unix.IN_ATTRIB != 0:
			// Its permissions changed: it may be readable now, and
			// without a watch (one needs read access), with what was
			// made in it meanwhile. Watched if it is not, and scanned.
			in.todo = append(in.todo, inotifyOp{kind: opWatch, path: p})
			work = true
		}
	}
	in.mu.Unlock()
	if work {
		kick(in.work)
	}
	if !in.skip(p) {
		in.namer.entry(dir, name, inotifyWrite(mask))
	}
}

// inotifyWrite is what an event says of its entry's writes.
func inotifyWrite(mask uint32) entryWrite {
	switch {
	case mask&unix.IN_ISDIR != 0:
		return writeNone
	case mask&(unix.IN_CLOSE_WRITE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0:
		return writeDone
	case mask&(unix.IN_CREATE|unix.IN_MODIFY) != 0:
		return writeOpen
	}
	return writeNone
}

func (in *inotify) close() {
	close(in.quit)
	in.f.Close()
	<-in.done
	in.wg.Wait()
	in.namer.close()
}
