package indexer

import (
	"testing"
	"time"

	"github.com/dupefs/dupefs/store"
)

// throttledRun indexes a tree of n copies of one content with at most rate
// files read per second (0: no limit), and returns how long it took and
// how many reads the read log saw.
func throttledRun(t *testing.T, n int, rate float64) (time.Duration, int) {
	t.Helper()
	e := newEnv(t)
	files := map[string]string{}
	for i := range n {
		files[string(rune('a'+i))+"/copy"] = "the same content in every copy"
	}
	tree(t, e.dir, files)
	e.addRoot(store.RootSpec{})
	cfg := e.config()
	cfg.MaxHashesPerSec = rate
	ix := New(IndexOf(e.db), cfg)
	if (ix.hashLimit == nil) != (rate == 0) {
		t.Fatalf("--max-hashes-per-sec %v: limiter %v", rate, ix.hashLimit)
	}
	start := time.Now()
	e.runWith(ix)
	took := time.Since(start)
	if g := e.groups(); len(g) != 1 || len(g[0]) != n {
		t.Fatalf("groups %q, want the %d copies in one", g, n)
	}
	return took, len(e.log.lines())
}

// With the throttle at 5 files a second, hashing 3 copies waits twice
// between reads: the run takes 400 ms at least (the first read does not
// wait). Only a lower bound is checked; a slow machine takes longer.
func TestHashThrottleSpacesReads(t *testing.T) {
	took, reads := throttledRun(t, 3, 5)
	if reads < 3 {
		t.Fatalf("%d reads, want each of the 3 copies read", reads)
	}
	if min := 2 * time.Second / 5; took < min-10*time.Millisecond {
		t.Errorf("3 reads at 5 a second took %v, want %v at least", took, min)
	}
}

// With the throttle off nothing waits: there is no limiter, and 11 copies
// are hashed in less time than the gaps a throttle of one read a second
// would put between them (10 s; the run takes well under one).
func TestHashThrottleOffDoesNotWait(t *testing.T) {
	took, reads := throttledRun(t, 11, 0)
	if reads < 11 {
		t.Fatalf("%d reads, want each of the 11 copies read", reads)
	}
	if took >= 10*time.Second {
		t.Errorf("11 reads with no throttle took %v, as long as a throttle of one a second", took)
	}
}
