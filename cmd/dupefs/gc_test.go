package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 200},
		{2 << 20, 200},
		{4 << 20, 200},
		{6 << 20, 133},
		{8 << 20, 100},
		{16 << 20, 100},
		{32 << 20, 100},
		{48 << 20, 66},
		{64 << 20, 50},
		{1 << 30, 50},
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

var liveSink [][]byte

// waitGOGC collects until GOGC is want (the finalizer that sets it runs
// after a collection, on its own goroutine).
func waitGOGC(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for gogc() != want {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC is %d, want %d", gogc(), want)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFollowLiveHeap(t *testing.T) {
	// The tuner of the index runs other tests made stays out of this one.
	was := liveHeapTuner.on.Swap(false)
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	old := debug.SetGCPercent(gcMaxPercent)
	var on atomic.Bool
	on.Store(true)
	followLiveHeap(&on)
	t.Cleanup(func() {
		on.Store(false)
		liveSink = nil
		debug.SetGCPercent(old)
		liveHeapTuner.on.Store(was)
	})
	// 96 MiB live: the growth is held near gcMaxGrowth, at the floor.
	for i := 0; i < 96; i++ {
		liveSink = append(liveSink, make([]byte, 1<<20))
	}
	waitGOGC(t, gcMinPercent)
	// Little live again: back to gcMaxPercent.
	liveSink = nil
	waitGOGC(t, gcMaxPercent)
	// Off: GOGC is left alone.
	on.Store(false)
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	debug.SetGCPercent(123)
	for i := 0; i < 96; i++ {
		liveSink = append(liveSink, make([]byte, 1<<20))
	}
	runtime.GC()
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	if got := gogc(); got != 123 {
		t.Errorf("with the tuner off, GOGC was changed to %d", got)
	}
}
