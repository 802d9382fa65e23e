package indexer

import (
	"os"
	"runtime"
	"sync"
)

// While a walk reads a cold disk, the process runs twice as many
// goroutines at once as it has CPUs (GOMAXPROCS). Its walkers then spend
// most of their time asleep in the kernel, in stats, folder reads and
// opens that wait on the disk, and the Go runtime gives a sleeping
// goroutine's processor to another only 20 µs to 10 ms into the call
// (sysmon): with one processor per CPU, the committer and the other
// walkers often wait for a processor while walkers sleep. On a tree in the
// page cache the same calls return at once and extra processors only make
// the goroutines take turns, so the boost is held only while the walk's
// probes find its reads going to the disk (aheadGate).
//
// Measured on /usr, 2 CPUs, caches dropped (medians of 3): GOMAXPROCS 2
// 5.97 s, 3 5.39 s, 4 5.19 s, 6 5.04 s, 8 5.35 s; warm, 4 was 9% slower
// than 2 (2.72 s against 2.49 s), and the boost leaves warm runs as they
// were. A GOMAXPROCS set in the environment is the user's: it is kept.

// coldProcs counts the walks that hold the boost.
var coldProcs struct {
	sync.Mutex
	holders int
	boosted bool
}

// holdColdProcs raises GOMAXPROCS for one more cold walk.
func holdColdProcs() {
	coldProcs.Lock()
	defer coldProcs.Unlock()
	coldProcs.holders++
	if coldProcs.holders == 1 && os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(2 * runtime.GOMAXPROCS(0))
		coldProcs.boosted = true
	}
}

// releaseColdProcs gives back what holdColdProcs took: after the last
// holder, GOMAXPROCS is the runtime's default again, with its automatic
// updates (a call to runtime.GOMAXPROCS stops them).
func releaseColdProcs() {
	coldProcs.Lock()
	defer coldProcs.Unlock()
	coldProcs.holders--
	if coldProcs.holders == 0 && coldProcs.boosted {
		runtime.SetDefaultGOMAXPROCS()
		coldProcs.boosted = false
	}
}
