package indexer

import (
	"bytes"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// The boost starts at the first tick that read coldBytes from storage and
// ends after coldQuiet ticks in a row that read less.
func TestColdStateFollowsTheReads(t *testing.T) {
	var s coldState
	steps := []struct {
		read uint64
		on   bool
	}{
		{0, false}, {coldBytes - 1, false}, // warm: page cache hits are not counted
		{coldBytes, true},
		{0, true}, {0, true}, {coldBytes * 10, true}, // a lull shorter than coldQuiet
		{0, true}, {0, true}, {0, false},
		{0, false}, {5 * coldBytes, true},
	}
	for i, st := range steps {
		if got := s.tick(st.read); got != st.on {
			t.Fatalf("tick %d (%d bytes read): boost %v, want %v", i, st.read, got, st.on)
		}
	}
}

// A walk's watch doubles GOMAXPROCS while the process reads from storage;
// walks share one watch, and the last to end restores the runtime's
// default.
func TestProcWatchRaisesGOMAXPROCS(t *testing.T) {
	orig := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(orig) })
	t.Setenv("GOMAXPROCS", "")
	runtime.SetDefaultGOMAXPROCS()
	base := runtime.GOMAXPROCS(0)

	var read atomic.Uint64
	ticks := make(chan time.Time)
	p := &procWatch{
		readBytes: func() (uint64, bool) { return read.Load(), true },
		ticks:     func() (<-chan time.Time, func()) { return ticks, func() {} },
	}
	// tick hands the watch one tick and waits for it to take the next:
	// the first tick is then decided.
	tick := func(n uint64) {
		read.Add(n)
		ticks <- time.Time{}
		ticks <- time.Time{}
	}
	want := func(step string, n int) {
		t.Helper()
		if got := runtime.GOMAXPROCS(0); got != n {
			t.Fatalf("%s: GOMAXPROCS %d, want %d", step, got, n)
		}
	}

	releaseA := p.hold()
	releaseB := p.hold()
	tick(0)
	want("warm", base)
	tick(coldBytes)
	want("reading from storage", 2*base)
	releaseA()
	releaseA()
	want("one walk ended (twice), one left", 2*base)
	releaseB()
	want("both walks ended", base)
	if p.holders != 0 || p.stop != nil {
		t.Fatalf("holders %d, watch running %v", p.holders, p.stop != nil)
	}
}

// read_bytes counts what a read had to fetch from the disk.
func TestStorageReadBytesCountsDiskReads(t *testing.T) {
	before, ok := storageReadBytes()
	if !ok {
		t.Fatal("no read_bytes in /proc/self/io")
	}
	const size = 1 << 20
	f := uncache(t, bytes.Repeat([]byte{1}, size), 0)
	defer f.Close()
	if _, err := f.ReadAt(make([]byte, size), 0); err != nil {
		t.Fatal(err)
	}
	after, _ := storageReadBytes()
	if after-before < size {
		t.Fatalf("read_bytes grew by %d reading %d bytes not in the page cache", after-before, size)
	}
}
