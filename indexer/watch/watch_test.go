package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/integration/loopfs"
	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/store"
)

// fixture is an index of some roots, indexed once, with a watcher
// running over it.
type fixture struct {
	t     *testing.T
	db    *store.DB
	w     *Watcher
	roots []string
	mu    sync.Mutex
	warns []string
}

func newFixture(t *testing.T, backend string, cfg Config, roots ...string) *fixture {
	t.Helper()
	return newFixtureAt(t, filepath.Join(t.TempDir(), "index.db"), backend, cfg, roots...)
}

// newFixtureAt is newFixture with the index at dbPath.
func newFixtureAt(t *testing.T, dbPath, backend string, cfg Config, roots ...string) *fixture {
	t.Helper()
	if backend == "fanotify" {
		testenv.NeedRoot(t, "fanotify marks need CAP_SYS_ADMIN")
	}
	ctx, cancel := context.WithCancel(context.Background())
	db, err := store.Open(ctx, store.Options{Path: dbPath})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: db, roots: roots}
	for _, r := range roots {
		if _, _, err := db.Files().AddRoot(ctx, store.RootSpec{Path: r}, true); err != nil {
			t.Fatal(err)
		}
	}
	ix := indexer.New(indexer.IndexOf(db), indexer.Config{Workers: 2})
	cfg.Backend = backend
	cfg.Skip = []string{db.Path()}
	cfg.Warn = func(s string) { f.mu.Lock(); f.warns = append(f.warns, s); f.mu.Unlock() }
	w := New(db.Files(), db.Jobs(), ix, cfg)
	f.w = w
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ix.Run(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		testenv.Recv(t, done, 30*time.Second, "the watcher to stop once cancelled")
		w.Close()
		db.Close()
	})
	return f
}

// groups are the duplicate groups, each its sorted paths joined by " ".
func (f *fixture) groups() []string {
	var out []string
	err := f.db.Files().Report(context.Background(), store.GroupQuery{MinSize: 1}, nil, func(g store.Group, files []store.GroupFile) error {
		var ps []string
		for _, file := range files {
			ps = append(ps, file.Path)
		}
		sort.Strings(ps)
		out = append(out, strings.Join(ps, " "))
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// eventually polls cond every 20 ms for up to limit: a bounded poll, no
// fixed sleep.
func (f *fixture) eventually(limit time.Duration, what string, cond func() bool) time.Duration {
	f.t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			f.t.Fatalf("after %s: %s\ngroups: %q\nwarnings: %q", limit, what, f.groups(), f.warns)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

func (f *fixture) hasGroup(paths ...string) func() bool {
	sort.Strings(paths)
	want := strings.Join(paths, " ")
	return func() bool { return slices.Contains(f.groups(), want) }
}

func write(t *testing.T, p, content string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func photo(i int) string { return fmt.Sprintf("photo %d ", i) + strings.Repeat("x", 5000+i) }

// The README's acceptance: cp, rm and mv of copies show within 2 seconds;
// so do a new folder of copies, a folder removed, and a copy moved to
// another root.
func TestWatchFollowsChanges(t *testing.T) {
	for _, backend := range []string{"fanotify", "inotify"} {
		t.Run(backend, func(t *testing.T) {
			base := t.TempDir()
			tree, other := filepath.Join(base, "tree"), filepath.Join(base, "other")
			write(t, filepath.Join(tree, "a.jpg"), photo(1))
			write(t, filepath.Join(tree, "sub/b.jpg"), photo(2))
			write(t, filepath.Join(other, "c.jpg"), photo(3))
			f := newFixture(t, backend, Config{}, tree, other)
			if g := f.groups(); len(g) != 0 {
				t.Fatalf("groups before: %q", g)
			}
			const limit = 2 * time.Second
			var lat []time.Duration
			cp := func(src, dst string) {
				b, _ := os.ReadFile(src)
				write(t, dst, string(b))
			}
			cp(filepath.Join(tree, "a.jpg"), filepath.Join(tree, "b.jpg"))
			lat = append(lat, f.eventually(limit, "a new copy", f.hasGroup(filepath.Join(tree, "a.jpg"), filepath.Join(tree, "b.jpg"))))
			os.Rename(filepath.Join(tree, "b.jpg"), filepath.Join(tree, "c.jpg"))
			lat = append(lat, f.eventually(limit, "a renamed copy", f.hasGroup(filepath.Join(tree, "a.jpg"), filepath.Join(tree, "c.jpg"))))
			os.Remove(filepath.Join(tree, "c.jpg"))
			lat = append(lat, f.eventually(limit, "a deleted copy", func() bool { return len(f.groups()) == 0 }))
			// A new folder with copies of b.jpg, made in one go.
			write(t, filepath.Join(tree, "new/deeper/b1.jpg"), photo(2))
			write(t, filepath.Join(tree, "new/deeper/b2.jpg"), photo(2))
			lat = append(lat, f.eventually(limit, "a new folder of copies", f.hasGroup(filepath.Join(tree, "sub/b.jpg"),
				filepath.Join(tree, "new/deeper/b1.jpg"), filepath.Join(tree, "new/deeper/b2.jpg"))))
			// Appending makes a copy differ.
			fd, _ := os.OpenFile(filepath.Join(tree, "new/deeper/b2.jpg"), os.O_APPEND|os.O_WRONLY, 0)
			fd.WriteString("edited")
			fd.Close()
			lat = append(lat, f.eventually(limit, "an appended copy", f.hasGroup(filepath.Join(tree, "sub/b.jpg"), filepath.Join(tree, "new/deeper/b1.jpg"))))
			// The folder goes, then a copy moves in from the other root.
			os.RemoveAll(filepath.Join(tree, "new"))
			lat = append(lat, f.eventually(limit, "a folder removed", func() bool { return len(f.groups()) == 0 }))
			cp(filepath.Join(other, "c.jpg"), filepath.Join(tree, "c-copy.jpg"))
			lat = append(lat, f.eventually(limit, "a copy across roots", f.hasGroup(filepath.Join(other, "c.jpg"), filepath.Join(tree, "c-copy.jpg"))))
			if err := os.Rename(filepath.Join(tree, "c-copy.jpg"), filepath.Join(other, "moved.jpg")); err != nil {
				t.Fatal(err)
			}
			lat = append(lat, f.eventually(limit, "a copy moved between roots", f.hasGroup(filepath.Join(other, "c.jpg"), filepath.Join(other, "moved.jpg"))))
			// A folder moved inside a root.
			os.Rename(filepath.Join(tree, "sub"), filepath.Join(other, "sub-moved"))
			write(t, filepath.Join(tree, "b-again.jpg"), photo(2))
			lat = append(lat, f.eventually(limit, "a folder moved between roots", f.hasGroup(filepath.Join(other, "sub-moved/b.jpg"), filepath.Join(tree, "b-again.jpg"))))
			t.Logf("%s: latencies %v", backend, lat)
			if bad, err := f.db.Folders().VerifyFolderSigs(context.Background()); err != nil || len(bad) > 0 {
				t.Errorf("folder signatures: %v %q", err, bad)
			}
		})
	}
}

// A burst of 10,000 new files is taken in without loss.
func TestWatchBurst(t *testing.T) {
	for _, backend := range []string{"fanotify", "inotify"} {
		t.Run(backend, func(t *testing.T) {
			tree := filepath.Join(t.TempDir(), "tree")
			write(t, filepath.Join(tree, "seed"), "x")
			f := newFixture(t, backend, Config{}, tree)
			start := time.Now()
			for i := 0; i < 10000; i++ {
				write(t, filepath.Join(tree, fmt.Sprintf("d%02d/f%05d", i%50, i)), photo(i%100))
			}
			made := time.Since(start)
			took := f.eventually(60*time.Second, "10,000 new files in the index", func() bool {
				tot, err := f.db.Totals(context.Background())
				return err == nil && tot.Files == 10001 && tot.Groups == 100 && tot.State == store.StateUpToDate
			})
			t.Logf("%s: 10,000 files written in %s, all indexed %s later; warnings %q", backend, made, took, f.warns)
		})
	}
}

// A root on a second file system (a loop-mounted ext4 image) is watched
// too.
func TestWatchSecondFileSystem(t *testing.T) {
	mnt := loopfs.Mount(t, "ext4", 64<<20)
	tree := filepath.Join(t.TempDir(), "tree")
	write(t, filepath.Join(tree, "a.jpg"), photo(1))
	write(t, filepath.Join(mnt, "b.jpg"), photo(2))
	f := newFixture(t, "fanotify", Config{}, tree, mnt)
	write(t, filepath.Join(mnt, "a-copy.jpg"), photo(1))
	f.eventually(2*time.Second, "a copy on the loop file system", f.hasGroup(filepath.Join(tree, "a.jpg"), filepath.Join(mnt, "a-copy.jpg")))
	write(t, filepath.Join(tree, "b-copy.jpg"), photo(2))
	f.eventually(2*time.Second, "a copy of a file on it", f.hasGroup(filepath.Join(mnt, "b.jpg"), filepath.Join(tree, "b-copy.jpg")))
}

// With inotify's limit set low, a root that cannot be watched whole is
// said once, with the numbers; it is rescanned on a timer (two copies made
// one after the other in folders without a watch show), counted as
// followed in part (status does not say up to date), and watched whole
// once the limit allows. The limit lowered is that of a user namespace of
// the test's own: the machine's, and every other process's, stay as they
// are.
func TestWatchInotifyLimit(t *testing.T) {
	if !testenv.InUserNamespace(t, 2*time.Minute) {
		return
	}
	const knob = "/proc/sys/user/max_inotify_watches"
	tree := filepath.Join(t.TempDir(), "tree")
	for i := 0; i < 60; i++ {
		write(t, filepath.Join(tree, fmt.Sprintf("d%02d/f", i)), fmt.Sprint("file ", i))
	}
	// Only this process uses inotify in the namespace.
	if err := os.WriteFile(knob, []byte("10"), 0o644); err != nil {
		t.Skipf("cannot lower the inotify limit of a user namespace: %v", err)
	}
	f := newFixture(t, "inotify", Config{Fallback: time.Second}, tree)
	ctx := context.Background()
	f.eventually(5*time.Second, "the root counted as followed in part", func() bool {
		tot, err := f.db.Totals(ctx)
		return err == nil && tot.PartlyWatched == 1
	})
	var unwatched []string
	for i := 59; i >= 0 && len(unwatched) < 2; i-- {
		if d := filepath.Join(tree, fmt.Sprintf("d%02d", i)); !f.watched(d) {
			unwatched = append(unwatched, d)
		}
	}
	if len(unwatched) < 2 {
		t.Fatalf("the limit of 10 watches left %q unwatched", unwatched)
	}
	for i, d := range unwatched {
		write(t, filepath.Join(d, "copy"), fmt.Sprint("file ", i))
		f.eventually(10*time.Second, "a copy in a folder without a watch",
			f.hasGroup(filepath.Join(tree, fmt.Sprintf("d%02d/f", i)), filepath.Join(d, "copy")))
	}
	if tot, err := f.db.Totals(ctx); err != nil || tot.PartlyWatched != 1 {
		t.Errorf("the root is not counted as followed in part: %+v, %v", tot, err)
	}
	f.mu.Lock()
	said := 0
	for _, w := range f.warns {
		if strings.Contains(w, "user.max_inotify_watches") {
			said++
			if !strings.Contains(w, "61 folders") || !strings.Contains(w, "allows 10 watches") {
				t.Errorf("the numbers are not said: %q", w)
			}
		}
	}
	if said != 1 {
		t.Errorf("the limit was said %d times: %q", said, f.warns)
	}
	f.mu.Unlock()
	if err := os.WriteFile(knob, []byte("1000"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.eventually(10*time.Second, "watched whole again", func() bool {
		tot, err := f.db.Totals(ctx)
		return err == nil && tot.PartlyWatched == 0 && f.w.ino.partial(tree) == nil
	})
	write(t, filepath.Join(unwatched[0], "copy2"), "file 2")
	f.eventually(2*time.Second, "a copy followed by its event", f.hasGroup(filepath.Join(tree, "d02/f"), filepath.Join(unwatched[0], "copy2")))
}

// watched reports whether inotify watches folder dir.
func (f *fixture) watched(dir string) bool {
	f.w.ino.mu.Lock()
	defer f.w.ino.mu.Unlock()
	_, ok := f.w.ino.paths[dir]
	return ok
}

// Changes in a Trash can, to dupefs' temporary files and below Skip ask
// for no scan; those to the Trash can itself and to a file named .Trash do.
func TestSkipped(t *testing.T) {
	w := New(nil, nil, nil, Config{Skip: []string{"/home/u/.cache/dupefs"}})
	for p, want := range map[string]bool{
		"/home/u/.local/share/Trash/files/a.jpg":      true,
		"/home/u/.local/share/Trash/files":            true,
		"/mnt/.Trash-1000/files/b":                    true,
		"/mnt/.Trash/1000":                            true,
		"/home/u/photos/.dupefs-0123456789abcdef.tmp": true,
		"/home/u/.cache/dupefs/thumbs/x":              true,
		"/home/u/.local/share/Trash":                  false,
		"/mnt/.Trash-1000":                            false,
		"/home/u/notes/.Trash":                        false,
		"/home/u/Trash/files/a.jpg":                   false,
		"/home/u/photos/a.jpg":                        false,
		"/home/u/photos/a.tmp":                        false,
	} {
		if got := w.skipped(p); got != want {
			t.Errorf("skipped(%q) = %v, want %v", p, got, want)
		}
	}
}
