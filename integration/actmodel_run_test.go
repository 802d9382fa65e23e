package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The steps of TestNeverTheLastCopy, and the control of its processes.

// ctl says how a command of a step is run: to its end, killed at a random
// moment, or frozen at a random moment while the test edits files and
// checks the promise, then let go.
type ctl struct {
	kill   bool
	freeze bool
}

func (m *model) randomCtl() ctl {
	switch m.rnd.Intn(10) {
	case 0, 1:
		return ctl{kill: true}
	case 2, 3:
		return ctl{freeze: true}
	}
	return ctl{}
}

// moment is a random moment in a command's run: most commands here take
// tens of milliseconds.
func (m *model) moment() time.Duration {
	if m.rnd.Intn(4) == 0 {
		return time.Duration(m.rnd.Intn(400)) * time.Millisecond
	}
	return time.Duration(m.rnd.Intn(60_000)) * time.Microsecond
}

// step takes one random step.
func (m *model) step(i int) {
	switch r := m.rnd.Intn(100); {
	case r < 8:
		m.run(m.randomCtl(), "index")
	case r < 55:
		m.run(m.randomCtl(), m.actArgs()...)
	case r < 63:
		// Two at once, with their own options.
		m.pair(m.actArgs(), m.actArgs())
	case r < 75:
		m.run(m.randomCtl(), m.undoArgs()...)
	case r < 88:
		for k := 0; k < 1+m.rnd.Intn(3); k++ {
			m.edit()
		}
	case r < 91:
		m.restoreByHand()
	case r < 94:
		m.dryRun()
	default:
		// The user makes more copies of contents, here and there.
		for k := 0; k < 2+m.rnd.Intn(4); k++ {
			p := m.paths[m.rnd.Intn(len(m.paths))]
			var st syscall.Stat_t
			if syscall.Lstat(p, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
				continue
			}
			if b, err := os.ReadFile(p); err == nil {
				// p holds these bytes too, and so does every path of its
				// inode: original paths of theirs.
				sum := sha256.Sum256(b)
				for _, q := range m.paths {
					var qs syscall.Stat_t
					if q != p && (syscall.Lstat(q, &qs) != nil || qs.Dev != st.Dev || qs.Ino != st.Ino) {
						continue
					}
					if m.contents[sum] == nil || !slices.Contains(m.contents[sum].paths, q) {
						m.own(q, sum)
					}
				}
				rel := filepath.Join(modelDirs[m.rnd.Intn(len(modelDirs))], fmt.Sprintf("more%d-%d", i, k))
				m.write(rel, b)
				m.logf("copied %q to %q", p, rel)
			}
		}
		m.run(ctl{}, "index")
	}
}

// actArgs are the arguments of a random dedupe, link or remove.
func (m *model) actArgs() []string {
	ops := [][]string{{"dedupe"}, {"link"}, {"link", "--symbolic"}, {"remove"}, {"remove", "--permanent"}}
	args := append([]string{}, ops[m.rnd.Intn(len(ops))]...)
	args = append(args, "--keep", []string{"oldest", "newest", "first-root", "shortest-path"}[m.rnd.Intn(4)])
	if m.rnd.Intn(4) == 0 {
		args = append(args, "--prefer", filepath.Join(m.root, modelDirs[m.rnd.Intn(len(modelDirs))]))
	}
	if m.rnd.Intn(3) == 0 {
		for _, k := range m.someKeys() {
			args = append(args, "--group", k)
		}
	}
	return args
}

// someKeys picks keys of groups of files and of folders the index has.
func (m *model) someKeys() []string {
	var keys []string
	r := dupefs(m.t, m.db, "groups", "--format", "json")
	var rep report
	if json.Unmarshal([]byte(r.stdout), &rep) == nil {
		for _, g := range rep.Groups {
			if m.rnd.Intn(3) == 0 {
				keys = append(keys, "sha256:"+g.FileHash)
			}
		}
	}
	r = dupefs(m.t, m.db, "folders", "--format", "json")
	var fr struct {
		Exact []struct {
			Key string `json:"key"`
		} `json:"exact"`
	}
	if json.Unmarshal([]byte(r.stdout), &fr) == nil {
		for _, g := range fr.Exact {
			if m.rnd.Intn(2) == 0 {
				keys = append(keys, g.Key)
			}
		}
	}
	return keys
}

// undoArgs undo the last plan, or a random one.
func (m *model) undoArgs() []string {
	r := dupefs(m.t, m.db, "ops", "--json")
	var plans []struct {
		ID int64 `json:"id"`
	}
	if json.Unmarshal([]byte(r.stdout), &plans) == nil && len(plans) > 0 && m.rnd.Intn(2) == 0 {
		return []string{"undo", fmt.Sprint(plans[m.rnd.Intn(len(plans))].ID)}
	}
	return []string{"undo"}
}

// command is a dupefs command of a step, started.
type command struct {
	args   []string
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan error
}

func (m *model) start(args []string) *command {
	c := &command{args: args, done: make(chan error, 1)}
	c.cmd = exec.Command(bin, append([]string{"--db", m.db}, args...)...)
	data := m.dataIn
	if m.rnd.Intn(2) == 0 {
		data = m.dataOut
	}
	c.cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+data)
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	return c
}

// control runs c as ctl says, to its end.
func (m *model) control(c *command, how ctl) {
	if how.kill || how.freeze {
		select {
		case err := <-c.done:
			c.done <- err
		case <-time.After(m.moment()):
			if how.kill {
				c.cmd.Process.Signal(syscall.SIGKILL)
			} else {
				m.frozen(c)
			}
		}
	}
	select {
	case err := <-c.done:
		m.ended(c, err, how.kill)
	case <-time.After(2 * time.Minute):
		c.cmd.Process.Kill()
		m.fail("dupefs %q still running after 2 minutes:\n%s", c.args, c.stderr.String())
		<-c.done
	}
}

// frozen stops c where it stands, edits files and checks the promise
// at that moment, then lets it go on.
func (m *model) frozen(cs ...*command) {
	for _, c := range cs {
		c.cmd.Process.Signal(syscall.SIGSTOP)
	}
	for _, c := range cs {
		waitFor(m.t, 10*time.Second, "a frozen dupefs", func() bool { return stoppedOrGone(c.cmd.Process.Pid) })
	}
	m.check(fmt.Sprintf("with %q frozen", cs[0].args))
	for k := 0; k < 1+m.rnd.Intn(2); k++ {
		m.edit()
	}
	m.check(fmt.Sprintf("with %q frozen, after an edit", cs[0].args))
	for _, c := range cs {
		c.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// stoppedOrGone reports whether a process is stopped (every thread of it),
// or ended before the signal reached it.
func stoppedOrGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i > 0 && i+2 < len(s) && s[i+2] == 'Z' {
		return true
	}
	return stopped(pid)
}

// ended checks how a command ended: killed, or with an exit code a user
// may see (0, 2 when some actions failed, 3 for a group that went, 8
// for folders not ready), never a crash.
func (m *model) ended(c *command, err error, killed bool) {
	code := c.cmd.ProcessState.ExitCode()
	m.logf("dupefs %q: exit %d%s", c.args, code, map[bool]string{true: " (killed)"}[killed])
	if strings.Contains(c.stderr.String(), "panic:") || strings.Contains(c.stderr.String(), "goroutine ") {
		m.fail("dupefs %q crashed:\n%s", c.args, c.stderr.String())
	}
	switch {
	case killed && code == -1:
	case code == 0, code == 2, code == 3, code == 8:
	default:
		m.fail("dupefs %q: exit %d (%v):\n%s", c.args, code, err, c.stderr.String())
	}
}

// run runs one command as how says.
func (m *model) run(how ctl, args ...string) {
	m.control(m.start(args), how)
}

// pair runs two commands at once, each killed or frozen at random.
func (m *model) pair(a, b []string) {
	ca, cb := m.start(a), m.start(b)
	if m.rnd.Intn(3) == 0 {
		time.Sleep(m.moment())
		m.frozen(ca, cb)
	}
	ha, hb := m.randomCtl(), m.randomCtl()
	ha.freeze, hb.freeze = false, false
	m.control(ca, ha)
	m.control(cb, hb)
}

// dryRun runs a dry run of a random command: nothing on disk may change.
func (m *model) dryRun() {
	before := m.snapshot()
	m.run(ctl{}, append(m.actArgs(), "--dry-run")...)
	if after := m.snapshot(); after != before {
		m.fail("a dry run changed the tree:\nbefore %s\nafter %s", before, after)
	}
}

// snapshot describes every entry under the mount: path, type, inode, size
// and mtime.
func (m *model) snapshot() string {
	var b strings.Builder
	filepath.WalkDir(m.mnt, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) == nil {
			fmt.Fprintf(&b, "%q %o %d %d %d\n", p, st.Mode, st.Ino, st.Size, st.Mtim.Nano())
		}
		return nil
	})
	return fmt.Sprintf("%x", b.String())
}

// restoreByHand puts a file of a Trash back at its path as a file manager
// does: the file renamed back, its .trashinfo deleted.
func (m *model) restoreByHand() {
	for _, trash := range []string{filepath.Join(m.dataIn, "Trash"), filepath.Join(m.mnt, ".Trash-0")} {
		infos, _ := filepath.Glob(filepath.Join(trash, "info", "*.trashinfo"))
		if len(infos) == 0 {
			continue
		}
		info := infos[m.rnd.Intn(len(infos))]
		b, err := os.ReadFile(info)
		if err != nil {
			continue
		}
		_, v, _ := strings.Cut(string(b), "Path=")
		v, _, _ = strings.Cut(v, "\n")
		orig, err := url.PathUnescape(v)
		if err != nil {
			continue
		}
		if !filepath.IsAbs(orig) {
			orig = filepath.Join(m.mnt, orig)
		}
		file := filepath.Join(trash, "files", strings.TrimSuffix(filepath.Base(info), ".trashinfo"))
		os.MkdirAll(filepath.Dir(orig), 0o755)
		if err := unix.Renameat2(unix.AT_FDCWD, file, unix.AT_FDCWD, orig, unix.RENAME_NOREPLACE); err == nil {
			os.Remove(info)
			m.logf("restored %q from the Trash by hand", orig)
		}
		return
	}
}

// noLeftovers fails if a temporary name of dupefs is left anywhere on the
// mount, or an action is not ended.
func (m *model) noLeftovers() {
	filepath.WalkDir(m.mnt, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".dupefs-") {
			m.fail("temporary file left: %q", p)
		}
		return nil
	})
	db := openIndex(m.t, m.db)
	var open int
	db.QueryRow("SELECT count(*) FROM actions WHERE state IN ('planned', 'leased', 'prepared')").Scan(&open)
	if open != 0 {
		m.fail("%d actions not ended after a last command reconciled what killed runs left", open)
	}
	if ok := integrityCheck(m.t, m.db); ok != "ok" {
		m.fail("integrity_check: %s", ok)
	}
}
