package indexer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store"
)

// fakeClock stops the store's clock (lease deadlines, retry_after) for the
// test; Advance moves it. The indexer's own timers still run on the wall
// clock.
func fakeClock(tb testing.TB) *store.FakeClock {
	tb.Helper()
	c := store.NewFakeClock(time.Now())
	tb.Cleanup(store.SetClock(c.Now))
	return c
}

// tree writes files under dir: path -> content. A content of "->target"
// makes a symlink, "=>other" a hard link to the file other.
func tree(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	var links []string
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		switch {
		case strings.HasPrefix(c, "->"):
			if err := os.Symlink(c[2:], full); err != nil {
				tb.Fatal(err)
			}
		case strings.HasPrefix(c, "=>"):
			links = append(links, p)
		default:
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
	for _, p := range links {
		if err := os.Link(filepath.Join(dir, files[p][2:]), filepath.Join(dir, p)); err != nil {
			tb.Fatal(err)
		}
	}
}

// readLog collects the lines of Config.ReadLog.
type readLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *readLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *readLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.buf.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func (l *readLog) reset() {
	l.mu.Lock()
	l.buf.Reset()
	l.mu.Unlock()
}

// env is an index and a tree to index.
type env struct {
	tb   testing.TB
	dir  string // the tree
	db   *store.DB
	log  *readLog
	mu   sync.Mutex // guards warn: hash readers warn at once
	warn []string
	met  string // the path a hookOnce met (interleave_test.go)
}

// warned records a warning; Config.Warn is called from several goroutines.
func (e *env) warned(s string) {
	e.mu.Lock()
	e.warn = append(e.warn, s)
	e.mu.Unlock()
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	base := tb.TempDir()
	db, err := store.Open(context.Background(), store.Options{Path: filepath.Join(base, "index.db")})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	dir := filepath.Join(base, "tree")
	os.Mkdir(dir, 0o755)
	return &env{tb: tb, dir: dir, db: db, log: &readLog{}}
}

func (e *env) addRoot(spec store.RootSpec) {
	e.tb.Helper()
	if spec.Path == "" {
		spec.Path = e.dir
	}
	if _, _, err := e.db.Files().AddRoot(context.Background(), spec, true); err != nil {
		e.tb.Fatal(err)
	}
}

func (e *env) config() Config {
	return Config{Workers: 2, ReadLog: e.log, Warn: e.warned}
}

// run indexes to completion.
func (e *env) run() {
	e.tb.Helper()
	if err := New(IndexOf(e.db), e.config()).Run(context.Background()); err != nil {
		e.tb.Fatal(err)
	}
}

// groups returns the duplicate groups as sorted lists of paths relative to
// the tree, sorted.
func (e *env) groups() [][]string {
	e.tb.Helper()
	var out [][]string
	err := e.db.Files().Report(context.Background(), store.GroupQuery{MinSize: 1}, nil, func(g store.Group, files []store.GroupFile) error {
		var ps []string
		for _, f := range files {
			rel, _ := filepath.Rel(e.dir, f.Path)
			ps = append(ps, rel)
		}
		sort.Strings(ps)
		out = append(out, ps)
		return nil
	})
	if err != nil {
		e.tb.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return strings.Join(out[i], "\x00") < strings.Join(out[j], "\x00") })
	return out
}

func (e *env) wantGroups(want ...[]string) {
	e.tb.Helper()
	for _, g := range want {
		sort.Strings(g)
	}
	sort.Slice(want, func(i, j int) bool { return strings.Join(want[i], "\x00") < strings.Join(want[j], "\x00") })
	got := e.groups()
	if len(got) != len(want) {
		e.tb.Fatalf("groups:\n got  %q\n want %q", got, want)
	}
	for i := range got {
		if !slices.Equal(got[i], want[i]) {
			e.tb.Fatalf("groups:\n got  %q\n want %q", got, want)
		}
	}
}

// reads returns how often each path (relative) was opened, by kind.
func (e *env) reads() map[string]int {
	out := map[string]int{}
	for _, l := range e.log.lines() {
		kind, q, _ := strings.Cut(l, " ")
		p := strings.Trim(q, `"`)
		rel, _ := filepath.Rel(e.dir, p)
		out[kind+" "+rel]++
	}
	return out
}
