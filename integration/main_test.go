package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/internal/pgtest"
)

// bin is the dupefs binary built for the tests.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dupefs-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "dupefs")
	if other := os.Getenv("DUPEFS_TEST_BIN"); other != "" {
		// Another build under test (an older one, to show that a test
		// finds what it was written for).
		bin = other
	} else {
		build := exec.Command("go", "build", "-o", bin, "../cmd/dupefs")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build dupefs:", err)
			os.Exit(1)
		}
	}
	// Commands never touch the real home of whoever runs the tests.
	os.Setenv("HOME", dir)
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	code := pgtest.Main(m) // stops the PostgreSQL server a test started
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the binary did.
type result struct {
	stdout, stderr string
	code           int
}

// dupefs runs the binary with --db db and the arguments.
func dupefs(tb testing.TB, db string, args ...string) result {
	tb.Helper()
	return dupefsIn(tb, "", db, args...)
}

// runTimeout bounds every run of the binary: one that hangs is killed and
// fails its test, instead of the whole package at go test's -timeout.
const runTimeout = 10 * time.Minute

// dupefsIn runs the binary in dir (or the test's cwd).
func dupefsIn(tb testing.TB, dir, db string, args ...string) result {
	tb.Helper()
	return runIn(tb, runTimeout, dir, db, args...)
}

// runIn runs the binary in dir and fails the test if it has not ended
// within timeout (it is then killed).
func runIn(tb testing.TB, timeout time.Duration, dir, db string, args ...string) result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--db", db}, args...)...)
	cmd.WaitDelay = 10 * time.Second // a child left holding stdout
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		tb.Fatalf("dupefs %v still ran after %v: killed\n%s", args, timeout, errb.String())
	}
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		tb.Fatalf("run dupefs %v: %v", args, err)
	}
	return r
}

// mustRun runs dupefs and fails the test unless it exits 0.
func mustRun(tb testing.TB, db string, args ...string) result {
	tb.Helper()
	r := dupefs(tb, db, args...)
	if r.code != 0 {
		tb.Fatalf("dupefs %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// report is the part of the JSON report the tests read.
type report struct {
	Header struct {
		Stats struct {
			GroupCount int `json:"group_count"`
		} `json:"stats"`
	} `json:"header"`
	Groups []struct {
		FileLen   int64    `json:"file_len"`
		FileHash  string   `json:"file_hash"`
		Files     []string `json:"files"`
		HardLinks []string `json:"hard_links"`
	} `json:"groups"`
}

// groups runs `dupefs groups --format json` and returns the groups as
// sorted lists of raw paths relative to base (escapes undone), sorted.
func groups(tb testing.TB, db, base string) [][]string {
	tb.Helper()
	r := mustRun(tb, db, "groups", "--format", "json")
	var rep report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		tb.Fatalf("groups --format json: %v\n%s", err, r.stdout)
	}
	if rep.Header.Stats.GroupCount != len(rep.Groups) {
		tb.Errorf("header counts %d groups, report has %d", rep.Header.Stats.GroupCount, len(rep.Groups))
	}
	var out [][]string
	for _, g := range rep.Groups {
		if len(g.FileHash) != 64 {
			tb.Errorf("file_hash %q is not a bare sha256 hex digest", g.FileHash)
		}
		var ps []string
		for _, f := range g.Files {
			p, err := unescape(f)
			if err != nil {
				tb.Fatal(err)
			}
			rel, err := filepath.Rel(base, p)
			if err != nil {
				tb.Fatal(err)
			}
			ps = append(ps, rel)
		}
		sort.Strings(ps)
		out = append(out, ps)
	}
	sortGroups(out)
	return out
}

func sortGroups(gs [][]string) {
	for _, g := range gs {
		sort.Strings(g)
	}
	sort.Slice(gs, func(i, j int) bool { return strings.Join(gs[i], "\x00") < strings.Join(gs[j], "\x00") })
}

func equalGroups(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// unescape undoes fclones' STFU-8 escapes: \\ \n \t \r \xNN.
func unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("dangling backslash in %q", s)
		}
		i++
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'x':
			if i+2 >= len(s) {
				return "", fmt.Errorf("short \\x in %q", s)
			}
			var v byte
			if _, err := fmt.Sscanf(s[i+1:i+3], "%02X", &v); err != nil {
				return "", fmt.Errorf("bad \\x in %q", s)
			}
			b.WriteByte(v)
			i += 2
		default:
			return "", fmt.Errorf("unknown escape \\%c in %q", s[i], s)
		}
	}
	return b.String(), nil
}

// waitFor polls cond until it holds, and fails the test once the timeout
// has passed.
func waitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	testenv.Eventually(tb, timeout, what, cond)
}

// bgProc is a dupefs command running in the background.
type bgProc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// startBackground runs dupefs --db db args... in the background; cleanup
// kills it if the test did not end it.
func startBackground(tb testing.TB, db string, args ...string) *bgProc {
	tb.Helper()
	p := &bgProc{stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"--db", db}, args...)...)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	tb.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				tb.Errorf("dupefs %v still running 10 s after SIGKILL", args)
			}
		}
	})
	return p
}

// interrupt sends SIGINT and returns the exit code (within 10 s).
func (p *bgProc) interrupt(tb testing.TB) int {
	tb.Helper()
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		tb.Fatalf("still running 10 s after SIGINT:\n%s", p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}
