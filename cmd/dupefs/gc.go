package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// The heap of an index run may grow to a fixed budget however little is
// live, and past it by half as much as is live (GOGC never below
// gcMinPercent). The budget is gcWalkBudget while a walk is under way and
// gcBudget otherwise:
//   - A walk allocates a little per entry while several MB are live: a
//     re-index of /usr at GOGC 100 collected 41 times, a fifth of its CPU
//     time. Its budget keeps that cheap.
//   - A fixed budget makes the peak of a walk's heap the same however long
//     the walk. With the heap let grow by as much as was live (8 MiB at
//     least), it peaked at the live heap's highest plus that, and a walk's
//     live heap moves by a few MB between collections (batches, listings
//     in flight): in 154 collections the walk of 1M files of distinct
//     sizes once held 10 MB live and grew to 20 MB, against 15 MB in the
//     17 collections of a tenth of it; the peak RSS was 1.11 times the
//     tenth's, on that tree and on the generated ones, and with the
//     budget 0.97 and 1.04 times (medians of 3, the builds alternated).
//     (GOGC 200 while less than 16 MiB was live was worse: 53.7 against
//     45.4 MB, the peak following the live heap three to one.)
//   - After a walk SQLite builds indexes and sums folders in memory of its
//     own, while the Go heap holds little: a budget as large there grew
//     the heap of 1M files to 16 MiB in the fold alone, where SQLite's
//     memory peaks, and the peak RSS to 1.10 times a tenth's. With the
//     smaller one, a first index of /usr peaked at 47.0 MB against 51.4,
//     in 2.39 s either way (medians of 5).
//   - A folder is read whole, so the walk of one folder of 300k files
//     held some 55 MB live and at GOGC 200 grew the heap to 175 MB.
//
// A soft limit of 192 MiB bounds the peak on large trees. The GOGC and
// GOMEMLIMIT environment variables, when set, win. The indexer tells when
// a walk starts and ends (indexer.Config.Walking), and gives the walk's
// heap back as it ends (returnWalkHeap in indexer/run.go).

const (
	gcWalkBudget = 16 << 20
	gcBudget     = 8 << 20
	gcMinPercent = 50
	// gcMinHeap is the runtime's least goal at GOGC 100: at any GOGC the
	// goal is never below gcMinHeap × GOGC/100, so a budget allows GOGC
	// up to 100 × budget/gcMinHeap. (Uncapped, GOGC 1500 after a walk made
	// a goal of 60 MiB.)
	gcMinHeap = 4 << 20
)

// liveHeapTuner sets GOGC from the live heap while on: one for the
// process, started by the first index run (tests run many in one
// process). walks counts the walks under way.
var liveHeapTuner struct {
	on    atomic.Bool
	walks atomic.Int32
	once  sync.Once
}

// tuneGC sets the collector up for an index run.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercentFor(0, gcBudget))
		liveHeapTuner.on.Store(true)
		liveHeapTuner.once.Do(func() { followLiveHeap(&liveHeapTuner.on, heapBudget) })
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(192 << 20)
	}
}

// gcWalking is the indexer's Config.Walking: it moves the budget as a walk
// starts and ends, at once rather than after the next collection.
func gcWalking(on bool) {
	if on {
		liveHeapTuner.walks.Add(1)
	} else {
		liveHeapTuner.walks.Add(-1)
	}
	if liveHeapTuner.on.Load() {
		retuneGC(heapBudget())
	}
}

// heapBudget is the budget of the moment.
func heapBudget() uint64 {
	if liveHeapTuner.walks.Load() > 0 {
		return gcWalkBudget
	}
	return gcBudget
}

// gcPercentFor is the GOGC that lets a heap of live bytes grow to budget,
// or by gcMinPercent, whichever is more.
func gcPercentFor(live, budget uint64) int {
	top := 100 * budget / gcMinHeap
	switch {
	case live >= budget:
		return gcMinPercent
	case live == 0:
		return int(top)
	}
	return int(min(top, max(gcMinPercent, 100*(budget-live)/live)))
}

// retuneGC sets GOGC from the heap live at the last collection.
func retuneGC(budget uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return
	}
	if p := gcPercentFor(s[0].Value.Uint64(), budget); uint64(p) != s[1].Value.Uint64() {
		debug.SetGCPercent(p)
	}
}

// gcSentinel is collected by every collection; its finalizer sets GOGC
// from the live heap and makes the next one. (It holds a pointer so it is
// never a tiny allocation, whose finalizers may not run.)
type gcSentinel struct{ _ *int }

// followLiveHeap sets GOGC from the live heap and the budget after every
// collection while on is set, for as long as the process runs.
func followLiveHeap(on *atomic.Bool, budget func() uint64) {
	var arm func()
	arm = func() {
		runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
			if on.Load() {
				retuneGC(budget())
			}
			arm()
		})
	}
	arm()
}
