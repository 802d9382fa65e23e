package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// The heap of an index run may grow to three times what is live before a
// collection, not twice (GOGC 100): a walk allocates a little per entry,
// and a re-index of /usr collected 41 times, a fifth of its CPU time. That
// is cheap while little is live, but a folder is read whole, so the walk
// of one folder of 300k files held some 55 MB live and grew the heap to
// 175 MB. So once the live heap passes half of gcHeadroom, GOGC falls with
// it (down to gcMinPercent), keeping the growth near gcHeadroom. A soft
// limit of 192 MiB bounds the peak on large trees. The GOGC and GOMEMLIMIT
// environment variables, when set, win.

const (
	gcMaxPercent = 200
	gcMinPercent = 50
	gcHeadroom   = 32 << 20
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

// gcPercentFor is the GOGC that lets a heap of live bytes grow by about
// gcHeadroom, within [gcMinPercent, gcMaxPercent].
func gcPercentFor(live uint64) int {
	if live == 0 {
		return gcMaxPercent
	}
	return int(max(gcMinPercent, min(gcMaxPercent, 100*uint64(gcHeadroom)/live)))
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
