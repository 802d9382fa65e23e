package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
)

// isMounted reports whether mountinfo shows a dupefs mount at dir.
func isMounted(dir string) bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && fields[4] == dir && strings.Contains(sc.Text(), " - fuse.dupefs ") {
			return true
		}
	}
	return false
}

// mounts holds the mount processes, by mount point, for their stderr.
var mounts = map[string]*mountProc{}

func mountLog(mnt string) string {
	if p := mounts[mnt]; p != nil {
		return "dupefs mount said:\n" + p.stderr.String()
	}
	return ""
}

// mountProc is a running `dupefs mount`.
type mountProc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{}
	mnt    string
}

// startMount runs `dupefs mount mnt args...` and waits for the mount,
// without a fixed sleep. Cleanup stops it and never leaves a mount behind.
func startMount(tb testing.TB, db, mnt string, args ...string) *mountProc {
	tb.Helper()
	return startMountEnv(tb, nil, db, mnt, args...)
}

// startMountEnv is startMount with extra environment variables.
func startMountEnv(tb testing.TB, env []string, db, mnt string, args ...string) *mountProc {
	tb.Helper()
	testenv.NeedFUSE(tb)
	p := &mountProc{stderr: &bytes.Buffer{}, done: make(chan struct{}), mnt: mnt}
	mounts[mnt] = p
	p.cmd = exec.Command(bin, append([]string{"--db", db, "mount", mnt}, args...)...)
	p.cmd.Stderr = p.stderr
	p.cmd.Env = append(os.Environ(), env...)
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	tb.Cleanup(func() {
		if !p.exited() {
			p.cmd.Process.Signal(syscall.SIGTERM)
			if !p.ended(15 * time.Second) {
				p.cmd.Process.Kill()
				if !p.ended(10 * time.Second) {
					tb.Errorf("dupefs mount still running 10 s after SIGKILL:\n%s", p.stderr)
				}
			}
		}
		if isMounted(mnt) {
			tb.Errorf("a mount was left at %s", mnt)
			syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	// Mounted, and answering: a stale mount of a killed process is listed
	// too, but answers ENOTCONN until the new process clears it.
	deadline := time.Now().Add(30 * time.Second)
	for !isMounted(mnt) || !answers(mnt) {
		if p.exited() || time.Now().After(deadline) {
			tb.Fatalf("dupefs mount did not mount %s:\n%s", mnt, p.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return p
}

// answers reports whether the server of a mount answers: an open always
// reaches it, a stat may be answered from the kernel's cache of a server
// that is gone.
func answers(mnt string) bool {
	_, err := os.ReadFile(filepath.Join(mnt, "status.json"))
	return err == nil
}

// ended waits at most timeout for the process to end, and reports
// whether it did.
func (p *mountProc) ended(timeout time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// wait waits at most timeout (after what) for the process to end; one
// still running then is killed and fails the test.
func (p *mountProc) wait(tb testing.TB, timeout time.Duration, what string) {
	tb.Helper()
	if !p.ended(timeout) {
		p.cmd.Process.Kill()
		tb.Fatalf("dupefs mount still running %v after %s:\n%s", timeout, what, p.stderr)
	}
}

// kill sends SIGKILL and waits (at most 10s) for the process to end.
func (p *mountProc) kill(tb testing.TB) {
	tb.Helper()
	p.cmd.Process.Kill()
	p.wait(tb, 10*time.Second, "SIGKILL")
}

func (p *mountProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits (at most 10s) for the process to end.
func (p *mountProc) stop(tb testing.TB) time.Duration {
	tb.Helper()
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(tb, 10*time.Second, "SIGTERM")
	// Ended by a signal, after unmounting: 130, as the README says.
	if code := p.cmd.ProcessState.ExitCode(); code != 130 {
		tb.Errorf("dupefs mount ended by SIGTERM exited %d, want 130:\n%s", code, p.stderr)
	}
	return time.Since(start)
}

// statusOf reads /status.json of a mount.
type statusOf struct {
	Totals struct {
		Files        int  `json:"files"`
		Groups       int  `json:"groups"`
		Queued       int  `json:"queued"`
		FolderGroups int  `json:"folder_groups"`
		FolderWasted int  `json:"folder_wasted_bytes"`
		HashUpToDate bool `json:"hash_up_to_date"`
	} `json:"totals"`
	Roots []struct {
		LastScan *string `json:"last_scan"`
	} `json:"roots"`
	ActiveJobs []struct {
		Kind string `json:"kind"`
	} `json:"active_jobs"`
}

func readStatus(tb testing.TB, mnt string) (statusOf, bool) {
	tb.Helper()
	var s statusOf
	b, err := os.ReadFile(filepath.Join(mnt, "status.json"))
	if err != nil {
		// A server that no longer answers is most often ending: its
		// last words are all in once it has (2 s at most).
		if p := mounts[mnt]; p != nil {
			p.ended(2 * time.Second)
		}
		tb.Fatalf("read status.json: %v\n%s", err, mountLog(mnt))
	}
	if err := json.Unmarshal(b, &s); err != nil {
		tb.Fatalf("status.json does not parse: %v\n%s", err, b)
	}
	done := s.Totals.HashUpToDate && len(s.ActiveJobs) == 0 && len(s.Roots) > 0
	for _, r := range s.Roots {
		done = done && r.LastScan != nil
	}
	return s, done
}

// waitIndexed waits until status.json says every root is scanned and hashed.
func waitIndexed(tb testing.TB, mnt string) statusOf {
	tb.Helper()
	var s statusOf
	waitFor(tb, 60*time.Second, "the mount's indexer to finish", func() bool {
		var done bool
		s, done = readStatus(tb, mnt)
		return done
	})
	return s
}

// mountedGroups reads /by-hash: each group as its copies' link targets
// relative to base.
func mountedGroups(tb testing.TB, mnt, base string) [][]string {
	tb.Helper()
	g, err := readGroups(mnt, base)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// readGroups is mountedGroups for a poll: while the view changes, an entry
// listed a moment ago may be gone (ENOENT), and the poll reads again.
func readGroups(mnt, base string) ([][]string, error) {
	keys, err := os.ReadDir(filepath.Join(mnt, "by-hash"))
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, k := range keys {
		links, err := os.ReadDir(filepath.Join(mnt, "by-hash", k.Name()))
		if err != nil {
			return nil, err
		}
		var g []string
		for _, l := range links {
			if l.Type()&os.ModeSymlink == 0 {
				return nil, fmt.Errorf("%s/%s is not a symlink", k.Name(), l.Name())
			}
			target, err := os.Readlink(filepath.Join(mnt, "by-hash", k.Name(), l.Name()))
			if err != nil {
				return nil, err
			}
			rel, _ := filepath.Rel(base, target)
			g = append(g, rel)
		}
		out = append(out, g)
	}
	sortGroups(out)
	return out, nil
}

// sh runs a shell command (a real client) and returns its output.
func sh(tb testing.TB, script string) (string, error) {
	tb.Helper()
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	return string(out), err
}
