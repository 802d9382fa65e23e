package indexer

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// A worker id names the process that holds a lease:
// "<host>/<pid>/<process start time>/<random>". The start time (field 22 of
// /proc/<pid>/stat) tells a live process from a later one that reused its
// pid, so a claim can recover the jobs of a process that died on this host
// at once instead of waiting for their leases to expire.

// NewWorkerID returns a fresh id for this process.
func NewWorkerID() string {
	host, _ := os.Hostname()
	host = strings.ReplaceAll(host, "/", "_")
	pid := os.Getpid()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s/%d/%d/%s", host, pid, procStart(pid), hex.EncodeToString(b))
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

// WorkerDead reports whether a worker id names a process of this host that
// no longer runs. Ids of other hosts, or ones it cannot parse, are never
// called dead: their leases expire instead.
func WorkerDead(id string) bool {
	parts := strings.Split(id, "/")
	if len(parts) != 4 {
		return false
	}
	host, _ := os.Hostname()
	if parts[0] != strings.ReplaceAll(host, "/", "_") {
		return false
	}
	pid, err1 := strconv.Atoi(parts[1])
	start, err2 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || start == 0 {
		return false
	}
	return procStart(pid) != start
}
