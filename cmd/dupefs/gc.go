package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// The heap of an index run grows between collections by about as much as
// is live, held within [gcMinGrowth, gcMaxGrowth], and GOGC within
// [gcMinPercent, gcMaxPercent]:
//   - A walk allocates a little per entry while little is live: a
//     re-index of /usr at GOGC 100 collected 41 times, a fifth of its CPU
//     time. Growth of at least gcMinGrowth keeps that cheap.
//   - That floor is fixed, not a multiple of the live heap, so the peak
//     follows the live heap one for one, not three to one. With GOGC 200
//     while less than 16 MiB was live, 1M files of distinct sizes peaked
//     at 53.7 MB against 45.4 MB at 100k, and one folder of 100k files at
//     68 MB; with this, 42.7 against 40.4, and 56 MB (medians of 3). /usr
//     is as fast (2.55 against 2.53 s, 7 alternating runs).
//   - A folder is read whole, so the walk of one folder of 300k files
//     held some 55 MB live and at GOGC 200 grew the heap to 175 MB. Past
//     gcMaxGrowth live, GOGC falls with the live heap down to
//     gcMinPercent. (8 MiB of growth there too cost 15% more CPU for 9%
//     less memory.)
//
// A soft limit of 192 MiB bounds the peak on large trees. The GOGC and
// GOMEMLIMIT environment variables, when set, win. The other half of the
// policy is the indexer's, which alone knows when a walk ends: it gives
// the walk's heap back then (returnWalkHeap in indexer/run.go).

const (
	gcMaxPercent = 200
	gcMinPercent = 50
	gcMinGrowth  = 8 << 20
	gcMaxGrowth  = 32 << 20
)

// liveHeapTuner sets GOGC from the live heap while on: one for the
// process, started by the first index run (tests run many in one process).
var liveHeapTuner struct {
	on   atomic.Bool
	once sync.Once
}

// tuneGC sets the collector up for an index run.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcMaxPercent)
		liveHeapTuner.on.Store(true)
		liveHeapTuner.once.Do(func() { followLiveHeap(&liveHeapTuner.on) })
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(192 << 20)
	}
}

// gcPercentFor is the GOGC that lets a heap of live bytes grow by as much
// again, within [gcMinGrowth, gcMaxGrowth] and [gcMinPercent, gcMaxPercent].
func gcPercentFor(live uint64) int {
	if live == 0 {
		return gcMaxPercent
	}
	growth := max(gcMinGrowth, min(gcMaxGrowth, live))
	return int(max(gcMinPercent, min(gcMaxPercent, 100*growth/live)))
}

// gcSentinel is collected by every collection; its finalizer sets GOGC
// from the live heap and makes the next one. (It holds a pointer so it is
// never a tiny allocation, whose finalizers may not run.)
type gcSentinel struct{ _ *int }

// followLiveHeap sets GOGC from the live heap after every collection
// while on is set, for as long as the process runs.
func followLiveHeap(on *atomic.Bool) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/gogc:percent"}}
	var arm func()
	arm = func() {
		runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
			if on.Load() {
				metrics.Read(s)
				if s[0].Value.Kind() == metrics.KindUint64 && s[1].Value.Kind() == metrics.KindUint64 {
					if p := gcPercentFor(s[0].Value.Uint64()); uint64(p) != s[1].Value.Uint64() {
						debug.SetGCPercent(p)
					}
				}
			}
			arm()
		})
	}
	arm()
}
