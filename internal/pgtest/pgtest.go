// Package pgtest gives tests a PostgreSQL database of their own: a private
// server per test binary, started on first use in a temporary folder
// (initdb with trust authentication, a unix socket in that folder, no TCP),
// and a fresh database per test. DUPEFS_TEST_PG=<url> uses an existing
// server instead. A test binary that uses it wraps its tests in Main, which
// stops the server when they end; a watchdog process stops it too when the
// binary dies any other way (a panic, a signal), so no server and no
// folder is left behind.
package pgtest

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver of database/sql
)

// EnvURL names the variable that points the tests at an existing server.
const EnvURL = "DUPEFS_TEST_PG"

// port only names the socket file: the server listens on no TCP port.
const port = "5432"

var (
	mu         sync.Mutex
	started    bool
	admin      string // URL of the server's postgres database
	why        error  // why there is no server (the tests skip with it)
	dog        *exec.Cmd
	dogPipe    *os.File      // its stdin: closing it stops the server
	dogAck     *bufio.Reader // what it says back (Restart)
	dogAckFile *os.File
	serial     atomic.Int64
)

// Main runs the tests of m and stops the server they started, if any. Call
// it from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if started && why == nil {
		for _, t := range templates {
			_ = drop(admin, t.db) // on a server of the tests' own, stop removes it anyway
		}
	}
	stop()
	return code
}

// URL creates a fresh, empty database for tb and returns its URL; the
// database is dropped when tb ends. It skips tb when no server can run
// here, saying why.
func URL(tb testing.TB) string {
	tb.Helper()
	return fresh(tb, "template0")
}

// URLFrom is URL of a database that starts as a copy of one prepare made
// once per test binary (by name): for what every test would otherwise
// make again, a schema say.
func URLFrom(tb testing.TB, name string, prepare func(url string) error) string {
	tb.Helper()
	base, err := server()
	if err != nil {
		tb.Skipf("no PostgreSQL server for the tests: %v", err)
	}
	mu.Lock()
	t, ok := templates[name]
	if !ok {
		t = &template{db: fmt.Sprintf("dupefs_template_%d_%s", os.Getpid(), name)}
		templates[name] = t
		if t.err = create(base, t.db, "template0"); t.err == nil {
			t.err = prepare(withDatabase(base, t.db))
		}
	}
	mu.Unlock()
	if t.err != nil {
		tb.Fatalf("pgtest: prepare template %s: %v", name, t.err)
	}
	return fresh(tb, t.db)
}

// A template is a database prepared once, which tests' databases copy.
type template struct {
	db  string
	err error
}

var templates = map[string]*template{}

// fresh creates a database for tb from template and drops it when tb ends.
func fresh(tb testing.TB, template string) string {
	tb.Helper()
	base, err := server()
	if err != nil {
		tb.Skipf("no PostgreSQL server for the tests: %v", err)
	}
	name := fmt.Sprintf("dupefs_test_%d_%d", os.Getpid(), serial.Add(1))
	if err := create(base, name, template); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() {
		if err := drop(base, name); err != nil {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return withDatabase(base, name)
}

// create makes database name as a copy of template. A copy of the
// template's files is the quicker way to a small database (a server
// before 15 knows no STRATEGY).
func create(base, name, template string) error {
	c, err := sql.Open("pgx", base)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := "CREATE DATABASE " + name + " TEMPLATE " + template
	if template == "template0" {
		// A user's server sorts text by its locale unless told
		// otherwise (Debian's clusters take the system's, en_US.UTF-8
		// say): the tests' databases sort so too, so that nothing of
		// the index rests on a byte order the server does not keep.
		q += " LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'"
	}
	if _, err := c.ExecContext(ctx, q+" STRATEGY FILE_COPY"); err != nil {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create database %s: %w", name, err)
		}
	}
	return nil
}

// drop drops database name, ending its sessions.
func drop(base, name string) error {
	c, err := sql.Open("pgx", base)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// withDatabase returns the URL (or key=value string) base naming database
// name instead.
func withDatabase(base, name string) string {
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err == nil {
			u.Path = "/" + name
			return u.String()
		}
	}
	return base + " dbname=" + name
}

// server returns the admin URL of the server, starting it on first use.
func server() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if started {
		return admin, why
	}
	started = true
	if u := os.Getenv(EnvURL); u != "" {
		admin = u
		return admin, nil
	}
	admin, why = start()
	return admin, why
}

// binary finds a PostgreSQL program: on PATH, else in Debian's folder.
func binary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(ms) > 0 {
		return ms[len(ms)-1], nil
	}
	return "", fmt.Errorf("%s is not installed (Debian: apt-get install postgresql; or set %s=<url>)", name, EnvURL)
}

// start makes a server in a new temporary folder and starts it under the
// watchdog, which stops it and removes the folder.
func start() (string, error) {
	initdb, err := binary("initdb")
	if err != nil {
		return "", err
	}
	postgres, err := binary("postgres")
	if err != nil {
		return "", err
	}
	// initdb and the server refuse to run as root: as root they run as
	// the postgres user, in a folder of theirs.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return "", fmt.Errorf("running as root, and there is no postgres user to run the server as: %w", err)
		}
		uid, uerr := strconv.Atoi(u.Uid)
		gid, gerr := strconv.Atoi(u.Gid)
		if uerr != nil || gerr != nil {
			return "", fmt.Errorf("user postgres: uid %q gid %q are not numbers", u.Uid, u.Gid)
		}
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	}
	// A short folder: the socket's path must fit in 107 bytes.
	dir, err := os.MkdirTemp("/tmp", "dupefs-pg-")
	if err != nil {
		return "", err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	data := filepath.Join(dir, "data")
	init := exec.Command(initdb, "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync")
	init.Dir = dir
	init.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := init.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("initdb: %w: %s", err, strings.TrimSpace(string(out)))
	}
	// A throwaway server: no fsync, no TCP.
	if err := startWatchdog(dir, cred, postgres, "-D", data, "-k", dir, "-p", port, "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	u := fmt.Sprintf("postgres://postgres@/postgres?host=%s&port=%s&sslmode=disable", url.QueryEscape(dir), port)
	if err := ready(u); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		stop()
		return "", fmt.Errorf("the server did not start: %w\n%s", err, log)
	}
	return u, nil
}

// ready waits until the server at u accepts connections, a minute at most.
func ready(u string) error {
	c, err := sql.Open("pgx", u)
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(time.Minute)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = c.PingContext(ctx)
		cancel()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
	}
}

// startWatchdog starts the process that runs the server (the command
// server) as its child and, once its stdin closes (Main closes it, or the
// kernel does when this process dies however it dies), shuts the server
// down at once (SIGQUIT: what pg_ctl -m immediate stop sends), waits for
// it and removes dir. It runs in a process group of its own so a ^C to the
// tests does not end it before it has cleaned up.
func startWatchdog(dir string, cred *syscall.Credential, server ...string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	log, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		w.Close()
		return err
	}
	defer log.Close()
	ackR, ackW, err := os.Pipe()
	if err != nil {
		w.Close()
		return err
	}
	defer ackW.Close()
	// A line "restart" on stdin stops the server (SIGINT: a fast
	// shutdown, which ends every session) and starts it again, and says
	// "down" on fd 3 once the old one has gone.
	script := `dir=$1; shift
"$@" </dev/null &
pid=$!
while read -r line; do
	kill -INT $pid 2>/dev/null
	wait $pid
	echo down >&3
	"$@" </dev/null &
	pid=$!
done
kill -QUIT $pid 2>/dev/null
wait $pid
rm -rf "$dir"`
	c := exec.Command("/bin/sh", append([]string{"-c", script, "pgtest-watchdog", dir}, server...)...)
	c.Stdin, c.Stdout, c.Stderr = r, log, log
	c.ExtraFiles = []*os.File{ackW}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	if err := c.Start(); err != nil {
		w.Close()
		ackR.Close()
		return fmt.Errorf("start the server's watchdog: %w", err)
	}
	dog, dogPipe, dogAck, dogAckFile = c, w, bufio.NewReader(ackR), ackR
	return nil
}

// Restart stops the tests' server, which ends every session, and starts it
// again; it returns once the server accepts connections. It skips tb when
// the tests use a server of someone else's (EnvURL).
func Restart(tb testing.TB) {
	tb.Helper()
	if _, err := server(); err != nil {
		tb.Skipf("no PostgreSQL server for the tests: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if dogPipe == nil {
		tb.Skipf("the tests use a server of their own (%s): it is not theirs to restart", EnvURL)
	}
	if _, err := io.WriteString(dogPipe, "restart\n"); err != nil {
		tb.Fatalf("pgtest: restart the server: %v", err)
	}
	if line, err := dogAck.ReadString('\n'); err != nil || line != "down\n" {
		tb.Fatalf("pgtest: restart the server: the watchdog said %q: %v", line, err)
	}
	if err := ready(admin); err != nil {
		tb.Fatalf("pgtest: the server did not start again: %v", err)
	}
}

// stop stops the server and waits until its folder is gone.
func stop() {
	if dogPipe == nil {
		return
	}
	dogPipe.Close()
	err := dog.Wait()
	dogAckFile.Close()
	dog, dogPipe, dogAck, dogAckFile = nil, nil, nil, nil
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: stopping the test server: %v\n", err)
	}
}
