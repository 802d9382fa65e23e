package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
)

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, budget uint64
		want         int
	}{
		// Little live: up to the budget, no further than the runtime's
		// least goal (4 MiB × GOGC/100) lets it.
		{0, gcBudget, 200},
		{1 * mib, gcBudget, 200},
		{2 * mib, gcBudget, 200},
		{4 * mib, gcBudget, 100},
		{5 * mib, gcBudget, 60},
		{0, gcWalkBudget, 400},
		{2 * mib, gcWalkBudget, 400},
		{4 * mib, gcWalkBudget, 300},
		{8 * mib, gcWalkBudget, 100},
		{10 * mib, gcWalkBudget, 60},
		// Past two thirds of the budget: by half as much as is live.
		{6 * mib, gcBudget, 50},
		{8 * mib, gcBudget, 50},
		{12 * mib, gcWalkBudget, 50},
		{64 * mib, gcWalkBudget, 50},
		{1 << 30, gcBudget, 50},
	} {
		if got := gcPercentFor(c.live, c.budget); got != c.want {
			t.Errorf("gcPercentFor(%d MiB, %d MiB) = %d, want %d", c.live>>20, c.budget>>20, got, c.want)
		}
	}
}

// metric reads one of the runtime's uint64 metrics.
func metric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func gogc() int { return int(metric("/gc/gogc:percent")) }

var liveSink [][]byte

// collect runs a collection and waits until every finalizer it queued has
// returned: the tuner's among them, which runs after each collection on
// the finalizer goroutine. The runtime counts the finalizers it queued
// and those that have returned.
func collect(t *testing.T) {
	t.Helper()
	runtime.GC()
	queued := metric("/gc/finalizers/queued:finalizers")
	testenv.Eventually(t, 5*time.Second, "the finalizers of a collection to run", func() bool {
		return metric("/gc/finalizers/executed:finalizers") >= queued
	})
}

// waitGOGC collects until GOGC is want (the finalizer that sets it runs
// after a collection, on its own goroutine).
func waitGOGC(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for gogc() != want {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC is %d, want %d", gogc(), want)
		}
		collect(t)
	}
}

func TestFollowLiveHeap(t *testing.T) {
	// The tuner of the index runs other tests made stays out of this one.
	was := liveHeapTuner.on.Swap(false)
	collect(t)
	old := debug.SetGCPercent(100)
	var on atomic.Bool
	on.Store(true)
	var budget atomic.Uint64
	budget.Store(gcBudget)
	followLiveHeap(&on, budget.Load)
	t.Cleanup(func() {
		on.Store(false)
		liveSink = nil
		debug.SetGCPercent(old)
		liveHeapTuner.on.Store(was)
	})
	// 96 MiB live: the heap grows by half as much again.
	for i := 0; i < 96; i++ {
		liveSink = append(liveSink, make([]byte, 1<<20))
	}
	waitGOGC(t, gcMinPercent)
	// Little live again: up to the budget, then to a larger one.
	liveSink = nil
	waitGOGC(t, gcPercentFor(0, gcBudget))
	budget.Store(gcWalkBudget)
	waitGOGC(t, gcPercentFor(0, gcWalkBudget))
	// Off: GOGC is left alone. Each collect returns once the tuner's
	// finalizer has run: a sentinel armed before a collection is queued
	// by it, and the second collection takes the one the first re-armed.
	on.Store(false)
	collect(t)
	debug.SetGCPercent(123)
	for i := 0; i < 96; i++ {
		liveSink = append(liveSink, make([]byte, 1<<20))
	}
	collect(t)
	collect(t)
	if got := gogc(); got != 123 {
		t.Errorf("with the tuner off, GOGC was changed to %d", got)
	}
	// The tuner was still there, off: on again, it sets GOGC at the next
	// collection.
	on.Store(true)
	waitGOGC(t, gcMinPercent)
}

func TestGCWalkingMovesTheBudgetAtOnce(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: the tuner stays off")
	}
	was := liveHeapTuner.on.Swap(true)
	old := debug.SetGCPercent(100)
	t.Cleanup(func() {
		liveHeapTuner.on.Store(was)
		debug.SetGCPercent(old)
	})
	runtime.GC() // a live heap of a few MiB at most, read by the tuner
	gcWalking(true)
	walking := gogc()
	gcWalking(false)
	after := gogc()
	if walking <= after {
		t.Errorf("GOGC %d during a walk, %d after: the walk's budget is the larger", walking, after)
	}
	if walking != gcPercentFor(metric("/gc/heap/live:bytes"), gcWalkBudget) {
		t.Errorf("GOGC %d during a walk, want the walk budget's %d", walking, gcPercentFor(metric("/gc/heap/live:bytes"), gcWalkBudget))
	}
}
