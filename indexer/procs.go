package indexer

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// While a walk waits on a cold disk, the process runs twice as many
// goroutines at once as it has CPUs (GOMAXPROCS). Its walkers then spend
// most of their time asleep in the kernel, in stats, folder reads and
// opens that wait on the disk, and the Go runtime gives a sleeping
// goroutine's processor to another only 20 µs to 10 ms into the call
// (sysmon): with one processor per CPU, the committer and the other
// walkers often wait for a processor while walkers sleep. On a tree in the
// page cache the same calls return at once and extra processors only make
// the goroutines take turns. So while a walk runs, a watch reads what the
// process has had read from storage (read_bytes of /proc/self/io) every
// tenth of a second, and holds the boost while that grows by coldBytes or
// more a tick.
//
// Measured on /usr, 2 CPUs, caches dropped, medians of 3: a first index
// with GOMAXPROCS 2 took 5.97 s, 3 5.39 s, 4 5.19 s, 6 5.04 s, 8 5.35 s; a
// re-index 1.9 s against 1.66 s with 4. Warm, 4 was 9% slower than 2 (2.72
// s against 2.49 s) where the watch leaves warm runs as they were.
// Config.FixedProcs turns the watch off (the command line sets it when the
// user chose GOMAXPROCS in the environment).

const (
	coldTick  = 100 * time.Millisecond
	coldBytes = 256 << 10 // read from storage in a tick: the walk waits on the disk
	coldQuiet = 3         // ticks under coldBytes in a row that end the boost
)

// coldWatch is the process's one watch, run while any walk holds it.
var coldWatch = procWatch{readBytes: storageReadBytes, ticks: func() (<-chan time.Time, func()) {
	t := time.NewTicker(coldTick)
	return t.C, t.Stop
}}

// procWatch raises GOMAXPROCS while the process reads from storage.
type procWatch struct {
	readBytes func() (uint64, bool) // bytes read from storage so far; false: not known
	ticks     func() (<-chan time.Time, func())

	// The watch starts and ends under life, so one run at most changes
	// GOMAXPROCS at a time.
	life    sync.Mutex
	holders int
	stop    chan struct{}
	done    chan struct{}
}

// hold starts the watch for one more walk; the walk calls the function it
// returns when it ends.
func (p *procWatch) hold() (release func()) {
	p.life.Lock()
	defer p.life.Unlock()
	p.holders++
	if p.holders == 1 {
		p.stop, p.done = make(chan struct{}), make(chan struct{})
		go p.run(p.stop, p.done)
	}
	var once sync.Once
	return func() { once.Do(p.release) }
}

// release ends the watch after its last walk, GOMAXPROCS restored.
func (p *procWatch) release() {
	p.life.Lock()
	defer p.life.Unlock()
	if p.holders--; p.holders > 0 {
		return
	}
	close(p.stop)
	<-p.done
	p.stop, p.done = nil, nil
}

// run polls read_bytes until stop, then leaves GOMAXPROCS as it found it.
func (p *procWatch) run(stop, done chan struct{}) {
	defer close(done)
	var st coldState
	defer func() {
		if st.on {
			setBoost(false)
		}
	}()
	last, ok := p.readBytes()
	if !ok {
		return
	}
	tick, stopTicks := p.ticks()
	defer stopTicks()
	for {
		select {
		case <-stop:
			return
		case <-tick:
		}
		n, ok := p.readBytes()
		if !ok {
			return
		}
		if was := st.on; st.tick(n-last) != was {
			setBoost(st.on)
		}
		last = n
	}
}

// coldState decides from tick to tick whether the process waits on the
// disk.
type coldState struct {
	on    bool
	quiet int // ticks in a row under coldBytes
}

// tick takes the bytes read from storage since the last tick.
func (s *coldState) tick(read uint64) (on bool) {
	switch {
	case read >= coldBytes:
		s.on, s.quiet = true, 0
	case s.on:
		if s.quiet++; s.quiet >= coldQuiet {
			s.on, s.quiet = false, 0
		}
	}
	return s.on
}

// setBoost sets GOMAXPROCS to twice its value, or back to the runtime's
// default (which also turns its automatic updates on again: a call to
// runtime.GOMAXPROCS stops them).
func setBoost(on bool) {
	if on {
		runtime.GOMAXPROCS(2 * runtime.GOMAXPROCS(0))
	} else {
		runtime.SetDefaultGOMAXPROCS()
	}
}

// storageReadBytes is read_bytes of /proc/self/io: what the process had
// read from storage, page cache hits not counted.
func storageReadBytes() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("read_bytes: ")); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
