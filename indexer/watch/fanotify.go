package watch

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store/naming"
)

// fanotify watches whole file systems with one mark each (root only):
// events name the folder by its file handle and the entry by its name.
// Folders are found from handles with open_by_handle_at; a cache of the
// folders seen lately keeps that off most events, and is dropped whenever
// a folder is moved. State: the cache (bounded) and an open
// folder per file system.
type fanotify struct {
	f     *os.File
	fd    int
	namer *namer // what changed, to the watcher
	skip  func(string) bool
	done  chan struct{}

	mu     sync.Mutex
	roots  map[string]fsid
	mounts map[fsid]int // an open folder on each marked file system
	cache  map[string]string
}

type fsid [2]int32

const fanMask = unix.FAN_CREATE | unix.FAN_DELETE | unix.FAN_MOVED_FROM | unix.FAN_MOVED_TO | unix.FAN_CLOSE_WRITE |
	unix.FAN_MODIFY | unix.FAN_ATTRIB | unix.FAN_ONDIR

// sizeofFanMeta is the size of struct fanotify_event_metadata.
const sizeofFanMeta = int(unsafe.Sizeof(unix.FanotifyEventMetadata{}))

// maxCache bounds the folder cache.
const maxCache = 100000

func newFanotify(out chan<- change, skip func(string) bool) (*fanotify, error) {
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK|unix.FAN_UNLIMITED_QUEUE|
		unix.FAN_REPORT_DFID_NAME, unix.O_RDONLY|unix.O_LARGEFILE)
	if err != nil {
		return nil, &os.SyscallError{Syscall: "fanotify_init", Err: err}
	}
	fa := &fanotify{f: os.NewFile(uintptr(fd), "fanotify"), fd: fd, namer: newNamer(out), skip: skip, done: make(chan struct{}),
		roots: map[string]fsid{}, mounts: map[fsid]int{}, cache: map[string]string{}}
	go fa.read()
	return fa, nil
}

func (fa *fanotify) name() string { return "fanotify" }

func (fa *fanotify) add(root string) error {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	if _, ok := fa.roots[root]; ok {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return fmt.Errorf("%w: %v", errUnwatched, err)
	}
	id := fsid(st.Fsid.Val)
	if _, ok := fa.mounts[id]; !ok {
		if err := unix.FanotifyMark(fa.fd, unix.FAN_MARK_ADD|unix.FAN_MARK_FILESYSTEM, fanMask, unix.AT_FDCWD, root); err != nil {
			return fmt.Errorf("%w: fanotify_mark: %v", errUnwatched, err)
		}
		mfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%w: %v", errUnwatched, err)
		}
		fa.mounts[id] = mfd
	}
	fa.roots[root] = id
	return nil
}

// retry does nothing: a file system fanotify could not mark stays
// rescanned on the timer.
func (fa *fanotify) retry(string) {}

func (fa *fanotify) remove(root string) {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	id, ok := fa.roots[root]
	if !ok {
		return
	}
	delete(fa.roots, root)
	for _, other := range fa.roots {
		if other == id {
			return // another root on that file system keeps the mark
		}
	}
	unix.FanotifyMark(fa.fd, unix.FAN_MARK_REMOVE|unix.FAN_MARK_FILESYSTEM, fanMask, unix.AT_FDCWD, root)
	unix.Close(fa.mounts[id])
	delete(fa.mounts, id)
}

func (fa *fanotify) read() {
	defer close(fa.done)
	buf := make([]byte, 256<<10)
	for {
		n, err := fa.f.Read(buf)
		if err != nil {
			return // closed
		}
		for b := buf[:n]; len(b) >= sizeofFanMeta; {
			m := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&b[0]))
			if int(m.Event_len) < sizeofFanMeta || int(m.Event_len) > len(b) {
				break
			}
			fa.event(m.Mask, b[m.Metadata_len:m.Event_len])
			if m.Fd >= 0 {
				unix.Close(int(m.Fd))
			}
			b = b[m.Event_len:]
		}
	}
}

// event handles one event: its info records hold the folder's handle and
// the entry's name.
func (fa *fanotify) event(mask uint64, info []byte) {
	if mask&unix.FAN_Q_OVERFLOW != 0 {
		fa.namer.note(change{lost: true})
		return
	}
	for len(info) >= 4 {
		typ, size := info[0], int(binary.NativeEndian.Uint16(info[2:4]))
		if size < 4 || size > len(info) {
			return
		}
		rec := info[4:size]
		info = info[size:]
		// fsid (8 bytes), struct file_handle (handle_bytes, handle_type,
		// f_handle), then the name, NUL-terminated.
		if typ != unix.FAN_EVENT_INFO_TYPE_DFID_NAME || len(rec) < 16 {
			continue
		}
		id := fsid{int32(binary.NativeEndian.Uint32(rec[0:4])), int32(binary.NativeEndian.Uint32(rec[4:8]))}
		hlen := int(binary.NativeEndian.Uint32(rec[8:12]))
		htype := int32(binary.NativeEndian.Uint32(rec[12:16]))
		if 16+hlen > len(rec) {
			continue
		}
		handle := rec[16 : 16+hlen]
		name := rec[16+hlen:]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		dir, ok := fa.folder(id, htype, handle)
		if !ok {
			continue
		}
		if mask&unix.FAN_ONDIR != 0 && mask&(unix.FAN_MOVED_FROM|unix.FAN_MOVED_TO) != 0 {
			// Paths below a moved folder changed. (A folder deleted
			// needs nothing: its handle opens nothing any more, and no
			// other folder's path changed.)
			fa.mu.Lock()
			clear(fa.cache)
			fa.mu.Unlock()
		}
		entry := len(name) > 0 && (len(name) != 1 || name[0] != '.')
		if entry && fa.skip(naming.JoinPath(dir, string(name))) {
			continue
		}
		if entry {
			fa.namer.entry(dir, string(name), fanWrite(mask))
		} else {
			fa.namer.name(dir)
		}
		if entry && mask&(unix.FAN_ONDIR|unix.FAN_ATTRIB) == unix.FAN_ONDIR|unix.FAN_ATTRIB {
			// A subfolder's permissions changed: it may be readable
			// now, with what was made in it meanwhile.
			fa.namer.name(naming.JoinPath(dir, string(name)))
		}
	}
}

// fanWrite is what an event says of its entry's writes. Events of one
// entry may be merged into one mask, their order lost: one that holds a
// close after writing, a delete or a move says the writes are over (a
// write after that raises an event of its own).
func fanWrite(mask uint64) entryWrite {
	switch {
	case mask&unix.FAN_ONDIR != 0:
		return writeNone
	case mask&(unix.FAN_CLOSE_WRITE|unix.FAN_DELETE|unix.FAN_MOVED_FROM|unix.FAN_MOVED_TO) != 0:
		return writeDone
	case mask&(unix.FAN_CREATE|unix.FAN_MODIFY) != 0:
		return writeOpen
	}
	return writeNone
}

// folder finds the path of a folder from its handle, if it lies under a
// root.
func (fa *fanotify) folder(id fsid, htype int32, handle []byte) (string, bool) {
	key := strconv.Itoa(int(id[0])) + ":" + strconv.Itoa(int(id[1])) + ":" + strconv.Itoa(int(htype)) + ":" + string(handle)
	fa.mu.Lock()
	defer fa.mu.Unlock()
	if p, ok := fa.cache[key]; ok {
		return p, p != ""
	}
	mfd, ok := fa.mounts[id]
	if !ok {
		return "", false
	}
	fd, err := unix.OpenByHandleAt(mfd, unix.NewFileHandle(htype, handle), unix.O_PATH|unix.O_CLOEXEC)
	if err != nil {
		return "", false // gone already: its parent's event covers it
	}
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	unix.Close(fd)
	if err != nil {
		return "", false
	}
	under := false
	for r := range fa.roots {
		if naming.Within(r, p) {
			under = true
			break
		}
	}
	if !under {
		p = "" // cached as "not ours"
	}
	if len(fa.cache) >= maxCache {
		clear(fa.cache)
	}
	fa.cache[key] = p
	return p, under
}

func (fa *fanotify) close() {
	fa.f.Close()
	<-fa.done
	fa.namer.close()
	fa.mu.Lock()
	for _, mfd := range fa.mounts {
		unix.Close(mfd)
	}
	fa.mu.Unlock()
}
