package watch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/store"
)

// gate stalls the inotify reader while it is shut: the reader falls
// behind on purpose, as it does on a busy machine.
type gate struct {
	mu   sync.Mutex
	shut bool
	open chan struct{}
}

func stallReader(t *testing.T) *gate {
	g := &gate{open: make(chan struct{})}
	inotifyHooks.event = func() {
		g.mu.Lock()
		shut, open := g.shut, g.open
		g.mu.Unlock()
		if shut {
			<-open
		}
	}
	t.Cleanup(func() { g.release(); inotifyHooks.event = nil })
	return g
}

func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.shut {
		g.shut, g.open = true, make(chan struct{})
	}
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut {
		g.shut = false
		close(g.open)
	}
}

// fakeLimit stands in for fs.inotify.max_user_watches: adding a watch to
// a folder not watched yet fails with ENOSPC once limit folders were
// watched.
type fakeLimit struct {
	mu      sync.Mutex
	limit   int
	watched map[string]bool
}

func limitWatches(t *testing.T, limit int) *fakeLimit {
	l := &fakeLimit{limit: limit, watched: map[string]bool{}}
	inotifyHooks.addWatch = func(fd int, p string, mask uint32) (int, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.watched[p] && len(l.watched) >= l.limit {
			return -1, unix.ENOSPC
		}
		wd, err := unix.InotifyAddWatch(fd, p, mask)
		if err == nil {
			l.watched[p] = true
		}
		return wd, err
	}
	inotifyHooks.limit = func() int { l.mu.Lock(); defer l.mu.Unlock(); return l.limit }
	t.Cleanup(func() { inotifyHooks.addWatch, inotifyHooks.limit = nil, nil })
	return l
}

func (l *fakeLimit) set(n int) { l.mu.Lock(); l.limit = n; l.mu.Unlock() }

// fresh indexes roots into an index of their own: what the watched index
// must end equal to.
func fresh(t *testing.T, roots ...string) (store.Totals, []string) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{Path: filepath.Join(t.TempDir(), "fresh.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, r := range roots {
		if _, _, err := db.Files().AddRoot(ctx, store.RootSpec{Path: r}, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := indexer.New(indexer.IndexOf(db), indexer.Config{Workers: 2}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	tot, err := db.Totals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return tot, (&fixture{t: t, db: db}).groups()
}

// equalsFresh: the watched index holds what a fresh index of its roots
// holds, and is up to date.
func (f *fixture) equalsFresh(want store.Totals, groups []string) func() bool {
	return func() bool {
		tot, err := f.db.Totals(context.Background())
		return err == nil && tot.State == store.StateUpToDate && tot.Files == want.Files &&
			tot.Folders == want.Folders && tot.Groups == want.Groups && slices.Equal(f.groups(), groups)
	}
}

// makeTree writes folders under dir, files in each, from n on; content
// repeats every 7 files, so copies group.
func makeTree(t *testing.T, dir string, folders, files, from int) {
	for d := 0; d < folders; d++ {
		for i := 0; i < files; i++ {
			k := from + d*files + i
			write(t, filepath.Join(dir, fmt.Sprintf("d%03d/s%d/f%d", d, d%3, k)), photo(k%7))
		}
	}
}

// Folders made while the reader is far behind, indexed meanwhile by a scan
// beside the watcher, then given more files before their watches exist:
// the index ends equal to a fresh one. (A rescan that passed over the
// folders the index knew lost the later files for good.)
func TestInotifyReaderBehind(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "tree")
	write(t, filepath.Join(tree, "seed"), "x")
	g := stallReader(t)
	f := newFixture(t, "inotify", Config{}, tree)
	g.hold()
	makeTree(t, tree, 60, 3, 0)
	// A scan beside the watcher (dupefs index) indexes the new folders
	// while their watches are still to come.
	ctx := context.Background()
	if err := indexer.New(indexer.IndexOf(f.db), indexer.Config{Workers: 2}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	makeTree(t, tree, 60, 3, 1000) // no watch sees these yet
	g.release()
	want, groups := fresh(t, tree)
	took := f.eventually(30*time.Second, "the index equal to a fresh one", f.equalsFresh(want, groups))
	t.Logf("converged %s after the reader caught up; %d files", took, want.Files)
}

// Past the watch limit at the start: said once with the numbers, the root
// rescanned on every tick (not once), status says it is watched in part;
// when the limit rises, it is watched whole again and status says so.
func TestInotifyLimitAtStart(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "tree")
	for i := 0; i < 30; i++ {
		write(t, filepath.Join(tree, fmt.Sprintf("d%02d/f", i)), fmt.Sprint("file ", i))
	}
	l := limitWatches(t, 10)
	f := newFixture(t, "inotify", Config{Fallback: 300 * time.Millisecond}, tree)
	ctx := context.Background()
	partly := func() bool {
		tot, err := f.db.Totals(ctx)
		roots, _ := f.db.Files().Roots(ctx)
		return err == nil && tot.PartlyWatched == 1 && len(roots) == 1 && strings.Contains(roots[0].WatchNote, "watched in part")
	}
	f.eventually(5*time.Second, "status says the root is watched in part", partly)
	// Two copies, one after the other, in folders without a watch: each
	// shows by a rescan of its own.
	write(t, filepath.Join(tree, "d29/copy"), "file 0")
	f.eventually(10*time.Second, "a copy in a folder without a watch", f.hasGroup(filepath.Join(tree, "d00/f"), filepath.Join(tree, "d29/copy")))
	write(t, filepath.Join(tree, "d28/copy"), "file 1")
	f.eventually(10*time.Second, "a second copy, later", f.hasGroup(filepath.Join(tree, "d01/f"), filepath.Join(tree, "d28/copy")))
	f.mu.Lock()
	said := 0
	for _, w := range f.warns {
		if strings.Contains(w, "fs.inotify.max_user_watches") {
			said++
			if !strings.Contains(w, "31 folders") || !strings.Contains(w, "allows 10 watches") {
				t.Errorf("the numbers are not said: %q", w)
			}
		}
	}
	f.mu.Unlock()
	if said != 1 {
		t.Errorf("the limit was said %d times: %q", said, f.warns)
	}
	l.set(1000)
	f.eventually(5*time.Second, "watched whole again", func() bool {
		tot, err := f.db.Totals(ctx)
		return err == nil && tot.PartlyWatched == 0 && f.w.ino.partial(tree) == nil
	})
	write(t, filepath.Join(tree, "d27/copy"), "file 2")
	f.eventually(2*time.Second, "a copy followed by its event", f.hasGroup(filepath.Join(tree, "d02/f"), filepath.Join(tree, "d27/copy")))
}

// A root that outgrows the limit while watched: said once, followed by
// rescans, and what is made in it still shows.
func TestInotifyLimitWhileWatching(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "tree")
	write(t, filepath.Join(tree, "a/f"), "file a")
	l := limitWatches(t, 1000)
	f := newFixture(t, "inotify", Config{Fallback: 300 * time.Millisecond}, tree)
	l.set(5)
	makeTree(t, tree, 12, 2, 0)
	write(t, filepath.Join(tree, "d011/s2/copy"), "file a")
	f.eventually(10*time.Second, "a copy in a folder made past the limit", f.hasGroup(filepath.Join(tree, "a/f"), filepath.Join(tree, "d011/s2/copy")))
	f.eventually(5*time.Second, "status says the root is watched in part", func() bool {
		tot, err := f.db.Totals(context.Background())
		return err == nil && tot.PartlyWatched == 1
	})
	// Later, in another folder without a watch: shown by a rescan on the
	// timer, not by the one that followed the limit.
	write(t, filepath.Join(tree, "d010/s1/copy"), "file a")
	f.eventually(10*time.Second, "a later copy past the limit", f.hasGroup(filepath.Join(tree, "a/f"),
		filepath.Join(tree, "d011/s2/copy"), filepath.Join(tree, "d010/s1/copy")))
	want, groups := fresh(t, tree)
	f.eventually(10*time.Second, "the index equal to a fresh one", f.equalsFresh(want, groups))
	f.mu.Lock()
	defer f.mu.Unlock()
	said := 0
	for _, w := range f.warns {
		if strings.Contains(w, "fs.inotify.max_user_watches") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("the limit was said %d times: %q", said, f.warns)
	}
}

// rm -rf of a tree drops every watch below it, and the reader keeps up.
func TestInotifyRemoveTree(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "tree")
	write(t, filepath.Join(tree, "keep/f"), "kept")
	for i := 0; i < 40; i++ {
		for j := 0; j < 25; j++ {
			os.MkdirAll(filepath.Join(tree, fmt.Sprintf("big/d%02d/e%02d", i, j)), 0o755)
		}
	}
	f := newFixture(t, "inotify", Config{}, tree)
	watches := func() int {
		f.w.ino.mu.Lock()
		defer f.w.ino.mu.Unlock()
		return len(f.w.ino.wds)
	}
	if n := watches(); n != 1043 {
		t.Fatalf("%d watches, want 1,043", n)
	}
	if err := os.RemoveAll(filepath.Join(tree, "big")); err != nil {
		t.Fatal(err)
	}
	f.eventually(10*time.Second, "the removed folders' watches dropped", func() bool { return watches() == 2 })
	want, groups := fresh(t, tree)
	f.eventually(10*time.Second, "the index equal to a fresh one", f.equalsFresh(want, groups))
	f.w.ino.mu.Lock()
	defer f.w.ino.mu.Unlock()
	if len(f.w.ino.paths) != 2 || len(f.w.ino.kids) > 2 {
		t.Errorf("left behind: %d paths, %d folders with subfolders", len(f.w.ino.paths), len(f.w.ino.kids))
	}
}

// A queue overflow (a small kernel queue and a reader held back): every
// folder of the root is watched again, and the index ends equal to a
// fresh one. Needs root to set the queue's size.
func TestInotifyOverflow(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setting fs.inotify.max_queued_events needs root")
	}
	const knob = "/proc/sys/fs/inotify/max_queued_events"
	old, err := os.ReadFile(knob)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(knob, []byte("64"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(knob, old, 0o644) })
	tree := filepath.Join(t.TempDir(), "tree")
	write(t, filepath.Join(tree, "seed"), "x")
	g := stallReader(t)
	f := newFixture(t, "inotify", Config{}, tree) // its queue holds 64 events
	os.WriteFile(knob, old, 0o644)
	g.hold()
	makeTree(t, tree, 40, 3, 0)
	for i := 0; i < 40; i++ { // events enough to overflow the root's queue
		write(t, filepath.Join(tree, fmt.Sprint("top", i)), photo(i%7))
	}
	g.release()
	want, groups := fresh(t, tree)
	f.eventually(30*time.Second, "the index equal to a fresh one", f.equalsFresh(want, groups))
	f.mu.Lock()
	lost := slices.ContainsFunc(f.warns, func(w string) bool { return strings.Contains(w, "events were lost") })
	f.mu.Unlock()
	if !lost {
		t.Fatalf("no overflow: %q", f.warns)
	}
	f.eventually(5*time.Second, "a watch on every folder", func() bool {
		f.w.ino.mu.Lock()
		defer f.w.ino.mu.Unlock()
		return int64(len(f.w.ino.paths)) == want.Folders
	})
	makeTree(t, tree, 40, 1, 5000) // into folders watched after the overflow
	want, groups = fresh(t, tree)
	f.eventually(10*time.Second, "files in them followed", f.equalsFresh(want, groups))
}

// A folder that keeps changing holds back no other: each folder is due
// once its own changes settle. (The changes of every folder waited for a
// moment when none changed, or for MaxDelay, so under steady churn every
// change took that long to show.)
func TestBusyFolderHoldsNoOther(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "tree")
	write(t, filepath.Join(tree, "a/seed"), photo(1))
	write(t, filepath.Join(tree, "busy/log"), "0")
	f := newFixture(t, "inotify", Config{Settle: 2 * time.Second, MaxDelay: time.Hour}, tree)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.WriteFile(filepath.Join(tree, "busy/log"), []byte(fmt.Sprint(i)), 0o644)
			time.Sleep(10 * time.Millisecond) // a writer's pace, not a wait for a condition
		}
	}()
	defer func() { close(stop); <-done }()
	write(t, filepath.Join(tree, "b/copy"), photo(1))
	f.eventually(20*time.Second, "a copy beside a folder that keeps changing", f.hasGroup(filepath.Join(tree, "a/seed"), filepath.Join(tree, "b/copy")))
}

// In a user namespace (a container) the namespace's own limit binds when
// it is lower than the system's, and the user is told that knob, with its
// number. (The system's was said, a limit that did not apply.)
func TestWatchLimitOfANamespace(t *testing.T) {
	dir := t.TempDir()
	knob := func(name, v string) {
		p := filepath.Join(dir, strings.ReplaceAll(name, ".", "/"))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inotifyHooks.procSys = dir
	t.Cleanup(func() { inotifyHooks.procSys = "" })
	knob("fs.inotify.max_user_watches", "192536")
	knob("user.max_inotify_watches", "50")
	n, k := watchLimit()
	if n != 50 || k != "user.max_inotify_watches" {
		t.Errorf("limit %d from %s, want 50 from user.max_inotify_watches", n, k)
	}
	hit := &limitHit{root: "/r", folders: 152, watched: 50, limit: n, knob: k}
	if say := hit.say("1m0s"); !strings.Contains(say, "allows 50 watches") || !strings.Contains(say, "sysctl user.max_inotify_watches=") {
		t.Errorf("said %q", say)
	}
	// Outside a namespace the two are the same number: the system's.
	knob("user.max_inotify_watches", "192536")
	if n, k := watchLimit(); n != 192536 || k != "fs.inotify.max_user_watches" {
		t.Errorf("limit %d from %s, want 192536 from fs.inotify.max_user_watches", n, k)
	}
}

// A root removed is said once and noted for status (the index keeps what
// it held); made again, it is watched anew and rescanned, and what is made
// in it later shows. So does a root moved away and made again at once.
// (A root made again was never watched again: changes in it never
// showed, and status said up to date.)
func TestRootGoneAndBack(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "tree")
	write(t, filepath.Join(tree, "a/seed"), photo(1))
	write(t, filepath.Join(tree, "b/copy"), photo(1))
	f := newFixture(t, "inotify", Config{Check: 100 * time.Millisecond}, tree)
	ctx := context.Background()
	noted := func(want string) func() bool {
		return func() bool {
			tot, err := f.db.Totals(ctx)
			roots, _ := f.db.Files().Roots(ctx)
			if want == "" {
				return err == nil && tot.PartlyWatched == 0
			}
			return err == nil && tot.PartlyWatched == 1 && len(roots) == 1 && strings.Contains(roots[0].WatchNote, want)
		}
	}
	if err := os.RemoveAll(tree); err != nil {
		t.Fatal(err)
	}
	f.eventually(10*time.Second, "status says the root is not followed", noted("not followed: not there"))
	write(t, filepath.Join(tree, "c/seed"), photo(2))
	write(t, filepath.Join(tree, "d/copy"), photo(2))
	f.eventually(10*time.Second, "the root made again rescanned", f.hasGroup(filepath.Join(tree, "c/seed"), filepath.Join(tree, "d/copy")))
	f.eventually(10*time.Second, "status no longer says it", noted(""))
	write(t, filepath.Join(tree, "e/later"), photo(2))
	f.eventually(10*time.Second, "a copy made later in the root made again",
		f.hasGroup(filepath.Join(tree, "c/seed"), filepath.Join(tree, "d/copy"), filepath.Join(tree, "e/later")))
	// Moved away and made again at once: the old folder's watches, which
	// moved with it, are dropped, the new one watched.
	if err := os.Rename(tree, tree+".old"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(tree, "f/seed"), photo(3))
	write(t, filepath.Join(tree, "g/copy"), photo(3))
	f.eventually(10*time.Second, "the new root rescanned", f.hasGroup(filepath.Join(tree, "f/seed"), filepath.Join(tree, "g/copy")))
	write(t, filepath.Join(tree, "h/later"), photo(3))
	write(t, filepath.Join(tree+".old", "c/moved-away"), photo(2)) // not a root's
	want, groups := fresh(t, tree)
	f.eventually(10*time.Second, "the index equal to a fresh one", f.equalsFresh(want, groups))
	f.mu.Lock()
	defer f.mu.Unlock()
	gone := 0
	for _, w := range f.warns {
		if strings.Contains(w, "is not there") {
			gone++
		}
	}
	if gone < 1 || gone > 2 { // the second time, it may be there again already
		t.Errorf("the root gone was said %d times: %q", gone, f.warns)
	}
}

// A root that cannot be read is said and noted for status; readable
// again, it is rescanned whole, with what was made in it meanwhile.
// (Files made while it could not be read never showed, and status said up
// to date.) Root reads every folder: this runs as an ordinary user.
func TestRootUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a folder whatever its permissions: run as an ordinary user")
	}
	tree := filepath.Join(t.TempDir(), "tree")
	write(t, filepath.Join(tree, "a/seed"), photo(1))
	write(t, filepath.Join(tree, "b/copy"), photo(1))
	f := newFixture(t, "inotify", Config{Check: 100 * time.Millisecond}, tree)
	t.Cleanup(func() { os.Chmod(tree, 0o755) })
	ctx := context.Background()
	noted := func() bool {
		roots, err := f.db.Files().Roots(ctx)
		return err == nil && len(roots) == 1 && strings.Contains(roots[0].WatchNote, "not followed: unreadable")
	}
	// A file made just before: the scan it asks for finds the root
	// unreadable.
	write(t, filepath.Join(tree, "a/copy2"), photo(1))
	if err := os.Chmod(tree, 0); err != nil {
		t.Fatal(err)
	}
	f.eventually(10*time.Second, "status says the root cannot be read", noted)
	if err := os.Chmod(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(tree, "c/copy3"), photo(1))
	want, groups := fresh(t, tree)
	f.eventually(10*time.Second, "the index equal to a fresh one", f.equalsFresh(want, groups))
	f.eventually(5*time.Second, "status no longer says it", func() bool { return !noted() })
	// A folder made that cannot be listed (nor watched: a watch needs
	// read access), files made in it, then it can be: watched and
	// scanned as its permissions change. (It stayed as it was, without a
	// watch.)
	sub := filepath.Join(tree, "d")
	if err := os.Mkdir(sub, 0o300); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(sub, 0o755) })
	write(t, filepath.Join(sub, "copy4"), photo(1))
	write(t, filepath.Join(tree, "a/copy5"), photo(1))
	want, groups = fresh(t, tree)
	f.eventually(10*time.Second, "the index equal to a fresh one, d unreadable", f.equalsFresh(want, groups))
	if err := os.Chmod(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	want, groups = fresh(t, tree)
	f.eventually(10*time.Second, "the index equal to a fresh one, d readable", f.equalsFresh(want, groups))
	write(t, filepath.Join(sub, "copy6"), photo(1))
	want, groups = fresh(t, tree)
	f.eventually(10*time.Second, "the index equal to a fresh one again", f.equalsFresh(want, groups))
}

// The index's disk fills while a tree is copied in: said once, not once a
// flush; once there is room again the watcher works through what is left
// without another change on disk, and the index ends equal to a fresh
// one. (The scan left retryable waited for a change on disk that never
// came: the index stayed incomplete for good.)
func TestIndexDiskFullThenRoom(t *testing.T) {
	testenv.NeedRoot(t, "mounts a small tmpfs for the index")
	idx := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=800k,mode=0755", "tmpfs", idx).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v\n%s", err, out)
	}
	t.Cleanup(func() { // after the fixture's cleanup, which closes the index
		if err := syscall.Unmount(idx, 0); err != nil {
			syscall.Unmount(idx, syscall.MNT_DETACH)
		}
	})
	tree := filepath.Join(t.TempDir(), "tree")
	write(t, filepath.Join(tree, "seed"), "x")
	f := newFixtureAt(t, filepath.Join(idx, "index.db"), "inotify", Config{Fallback: 2 * time.Second}, tree)
	for d := 0; d < 40; d++ {
		for i := 0; i < 60; i++ {
			write(t, filepath.Join(tree, fmt.Sprintf("folder-with-a-long-name-%03d/file-with-a-long-name-%04d", d, i)), fmt.Sprint(d*100+i%50))
		}
	}
	full := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := 0
		for _, w := range f.warns {
			// A write may fit now and then while the disk is nearly
			// full (a fold between two flushes): each time it fills
			// again is said once more, not each flush that fails.
			if strings.Contains(w, "disk full") && !strings.Contains(w, "written again") {
				n++
			}
		}
		return n
	}
	f.eventually(30*time.Second, "the disk full said", func() bool { return full() > 0 })
	if out, err := exec.Command("mount", "-o", "remount,size=64m", idx).CombinedOutput(); err != nil {
		t.Fatalf("grow tmpfs: %v\n%s", err, out)
	}
	want, groups := fresh(t, tree)
	f.eventually(60*time.Second, "the index equal to a fresh one", f.equalsFresh(want, groups))
	if n := full(); n > 3 {
		t.Errorf("the disk full said %d times: %q", n, f.warns)
	}
}
