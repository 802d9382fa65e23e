package indexer

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
)

// A worker id names the process that holds a lease:
// "<host>/<machine id>/<boot id>/<pid namespace>/<pid>/<start time>/<random>".
// The host is the name the process works as (store.Host), the machine id
// the one it registered with; the boot id (/proc/sys/kernel/random/boot_id,
// without dashes) names one run of the kernel; the pid namespace is the
// inode of /proc/self/ns/pid ("0" when unknown), since a pid means nothing
// outside its namespace: a container may share the machine's kernel and
// reuse its pids. The start time (field 22 of /proc/<pid>/stat) tells a
// live process from a later one that reused its pid. With them a claim
// recovers at once the jobs of a process that provably died: one of this
// machine, boot and pid namespace whose pid is gone or started at another
// time, or one of an earlier boot of this machine. Any other worker may
// live (on another machine above all): its leases expire instead.

// unknown stands for a boot id or pid namespace that could not be read.
const unknown = "0"

// idField makes s fit in a field of a worker id.
func idField(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "/", "_")
}

// bootID is the kernel's boot id, dashes left out, or unknown.
var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if s := idField(strings.ReplaceAll(string(b), "-", "")); err == nil && s != "" {
		return s
	}
	return unknown
})

// pidNS is the inode of this process's pid namespace, or unknown; unknown
// too when /proc numbers pids otherwise than this process does (a /proc
// of another namespace), so that no pid is looked up there.
var pidNS = sync.OnceValue(func() string {
	if self, err := os.Readlink("/proc/self"); err != nil || self != strconv.Itoa(os.Getpid()) {
		return unknown
	}
	l, err := os.Readlink("/proc/self/ns/pid") // "pid:[4026531836]"
	if err != nil || !strings.HasPrefix(l, "pid:[") || !strings.HasSuffix(l, "]") {
		return unknown
	}
	ino := l[len("pid:[") : len(l)-1]
	if n, err := strconv.ParseUint(ino, 10, 64); err != nil || n == 0 {
		return unknown
	}
	return ino
})

// NewWorkerID returns a fresh id for this process, working as host h.
func NewWorkerID(h store.Host) string {
	pid := os.Getpid()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s/%s/%s/%s/%d/%d/%s", idField(h.Name), machineField(h), bootID(), pidNS(), pid, procStart(pid),
		hex.EncodeToString(b))
}

// machineField is h's machine id as a field of a worker id.
func machineField(h store.Host) string {
	if m := idField(h.MachineID); m != "" {
		return m
	}
	return unknown
}

// procStart returns the start time of a process in clock ticks since boot,
// or 0 when it does not run (or /proc is not there).
func procStart(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); the start time is field 22.
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// DeadOn returns the test of a worker id that a process working as h
// makes: whether the id names a process that provably no longer runs, one
// of an earlier boot of h's machine, or one of h's machine, boot and pid
// namespace whose pid is gone or started at another time. Ids of other
// machines or namespaces, ids of a form of older builds, and ones it
// cannot parse are never called dead: their leases expire instead.
func DeadOn(h store.Host) func(id string) bool {
	machine := machineField(h)
	return func(id string) bool { return workerDead(machine, id) }
}

func workerDead(machine, id string) bool {
	f := strings.Split(id, "/")
	if len(f) != 7 {
		return false
	}
	m, boot, ns := f[1], f[2], f[3]
	if m == unknown || m != machine || boot == unknown || bootID() == unknown {
		return false
	}
	if boot != bootID() {
		return true // the machine rebooted: no process of that boot runs
	}
	if ns == unknown || ns != pidNS() {
		return false
	}
	pid, err1 := strconv.Atoi(f[4])
	start, err2 := strconv.ParseUint(f[5], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 || start == 0 {
		return false
	}
	if now := procStart(pid); now != 0 {
		return now != start
	}
	// Its stat could not be read: dead only if no process has the pid (a
	// /proc mounted with hidepid hides the processes of other users).
	return errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}
