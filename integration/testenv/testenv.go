package testenv

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// NeedRoot skips the test unless it runs as root: why says what the test
// does that only root may (mount, chown to another user, fanotify...).
// CI runs every test as root.
func NeedRoot(tb testing.TB, why string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root: " + why)
	}
}

// Eventually polls cond until it holds, and fails the test (saying what
// it waited for) once timeout has passed. It polls at once, then at
// intervals growing from 1 to 20 ms: a quick condition is seen quickly, a
// costly one (a run of the binary, a read through a mount) is not run in
// a tight loop.
func Eventually(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for pause := time.Millisecond; !cond(); pause = min(2*pause, 20*time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("still waiting after %v: %s", timeout, what)
		}
		time.Sleep(pause)
	}
}

// Recv waits at most timeout for a value from ch, and fails the test
// (saying what it waited for) if none came.
func Recv[T any](tb testing.TB, ch <-chan T, timeout time.Duration, what string) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		tb.Fatalf("still waiting after %v: %s", timeout, what)
		var zero T
		return zero
	}
}

// NeedFUSE skips the test unless it may mount a FUSE file system with
// mount(2): root, and a /dev/fuse it can open.
func NeedFUSE(tb testing.TB) {
	tb.Helper()
	NeedRoot(tb, "mounts a FUSE file system with mount(2)")
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		tb.Skipf("needs /dev/fuse: %v", err)
	}
	f.Close()
}

// Returns runs wait (a WaitGroup's Wait, a server's Wait) and fails the
// test if it has not returned after timeout. wait is left running then.
func Returns(tb testing.TB, timeout time.Duration, what string, wait func()) {
	tb.Helper()
	done := make(chan struct{})
	go func() { wait(); close(done) }()
	Recv(tb, done, timeout, what)
}

// WaitCmd waits at most timeout for a started command to end and returns
// what cmd.Wait returned. A command still running then is killed (its
// whole process group, when it has one of its own) and the test fails.
func WaitCmd(tb testing.TB, cmd *exec.Cmd, timeout time.Duration) error {
	tb.Helper()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-time.After(timeout):
		kill(cmd)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
		tb.Fatalf("%v still running after %v: killed", cmd.Args, timeout)
		return nil
	}
}

// kill sends SIGKILL to cmd's process group if it leads one, else to it.
func kill(cmd *exec.Cmd) {
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.Process.Kill()
}
