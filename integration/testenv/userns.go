package testenv

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// usernsEnv names, in the environment of a test run again in a user
// namespace of its own, the test it runs.
const usernsEnv = "DUPEFS_TEST_USERNS"

// InUserNamespace runs the calling test again, alone, in a child process
// in a new user namespace where it is root (mapped to the caller's user
// and group), and reports the child's outcome as the test's: it returns
// false in the caller, once the child passed (a failure or a skip of the
// child fails or skips the test), and true in the child, which goes on
// with the test. A user namespace has limits of its own (the files under
// /proc/sys/user), which its root may lower without touching those of
// the machine or of any other process; every namespace above still
// bounds it. The test is skipped, saying why, where no user namespace can
// be made (a kernel without them, user.max_user_namespaces at 0, or
// unprivileged ones refused). timeout bounds the child's run.
func InUserNamespace(t *testing.T, timeout time.Duration) bool {
	t.Helper()
	if os.Getenv(usernsEnv) == t.Name() {
		return true
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.v", "-test.count=1",
		"-test.timeout="+timeout.String())
	cmd.Env = append(os.Environ(), usernsEnv+"="+t.Name())
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Setpgid:     true,
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("needs a user namespace of its own, and none could be made: %v", err)
	}
	err := WaitCmd(t, cmd, timeout+30*time.Second)
	log := out.String()
	var exit *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exit):
		t.Fatalf("the run in a user namespace: %v\n%s", err, log)
	case err != nil:
		t.Fatalf("the run in a user namespace failed (%v):\n%s", err, log)
	case strings.Contains(log, "--- SKIP: "+t.Name()):
		t.Skipf("skipped in a user namespace:\n%s", log)
	case !strings.Contains(log, "--- PASS: "+t.Name()):
		t.Fatalf("the run in a user namespace did not run the test:\n%s", log)
	}
	t.Logf("the run in a user namespace:\n%s", log)
	return false
}
