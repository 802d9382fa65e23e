package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dupefs/dupefs/store/naming"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// console is where a command talks to the user: stderr. Warnings always
// go there; on a terminal it also shows a progress display (vbauerster/mpb:
// it fits the terminal's width and keeps warnings above the bar), and on a
// pipe or a file nothing but the warnings and the final summary.
type console struct {
	w   io.Writer
	tty bool

	mu   sync.Mutex
	prog *mpb.Progress // while a display runs
}

func newConsole(w io.Writer) *console { return &console{w: w, tty: terminal(w)} }

// terminal reports whether w is a terminal.
func terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Warn prints "dupefs: msg" on a line of its own, above the display if one
// runs.
func (c *console) Warn(msg string) { c.Printf("dupefs: %s\n", msg) }

// Printf prints above the display if one runs.
func (c *console) Printf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prog != nil {
		fmt.Fprintf(c.prog, format, args...)
		return
	}
	fmt.Fprintf(c.w, format, args...)
}

// sample is what a display shows at one moment: the phase the work is in
// (phases are numbered in the order they come; the display never goes
// back to an earlier one), a label ("": nothing to show yet), and how far
// the phase is.
type sample struct {
	phase int
	label string
	bytes bool  // done and total count bytes, else items
	done  int64 // items or bytes done in this phase
	total int64 // expected; 0 when unknown
	extra string
}

// show redraws a display from sample every 200 ms until the returned stop
// is called. Each phase gets a bar of its own; its percentage only grows
// (the total may be an estimate that shrinks as the work learns more), and
// the ETA comes from the rate over the last seconds and what is left. On a
// pipe it shows nothing. stop may be called more than once.
func (c *console) show(sample func() sample) (stop func()) {
	if !c.tty {
		return func() {}
	}
	prog := mpb.New(mpb.WithOutput(c.w), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithAutoRefresh())
	c.mu.Lock()
	c.prog = prog
	c.mu.Unlock()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var cur *phaseBar
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			s := sample()
			if s.label == "" {
				// nothing to show yet
			} else if cur == nil || s.phase > cur.phase {
				if cur != nil {
					cur.finish()
				}
				cur = newPhaseBar(prog, s)
			}
			if cur != nil && s.phase == cur.phase {
				cur.update(s)
			}
			select {
			case <-done:
				if cur != nil {
					cur.finish()
				}
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-finished
			prog.Wait()
			c.mu.Lock()
			c.prog = nil
			c.mu.Unlock()
		})
	}
}

// phaseBar is the bar of one phase.
type phaseBar struct {
	phase int
	bar   *mpb.Bar

	mu    sync.Mutex
	s     sample
	frac  float64 // shown, never less than before
	rate  float64 // per second, smoothed
	lastT time.Time
	lastN int64
}

// barSteps is the resolution of a bar: its current and total are kept in
// thousandths of the phase.
const barSteps = 1000

func newPhaseBar(prog *mpb.Progress, s sample) *phaseBar {
	p := &phaseBar{phase: s.phase, s: s}
	// A phase whose size is not known when it begins shows no bar, only
	// its count and rate.
	var filler mpb.BarFillerBuilder = mpb.BarStyle().Lbound("[").Rbound("]")
	if s.total <= 0 {
		filler = mpb.NopStyle()
	}
	p.bar = prog.New(0, filler,
		mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return p.label() }, decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return p.text() })),
	)
	p.bar.SetTotal(barSteps, false)
	return p
}

func (p *phaseBar) update(s sample) {
	p.mu.Lock()
	now := time.Now()
	if p.lastT.IsZero() {
		p.lastT, p.lastN = now, s.done
	} else if dt := now.Sub(p.lastT).Seconds(); dt >= 0.5 {
		r := float64(s.done-p.lastN) / dt
		if p.rate == 0 {
			p.rate = r
		} else {
			p.rate = 0.7*p.rate + 0.3*r
		}
		p.lastT, p.lastN = now, s.done
	}
	p.s = s
	if s.total > 0 {
		p.frac = max(p.frac, min(1, float64(s.done)/float64(s.total)))
	}
	frac := p.frac
	p.mu.Unlock()
	p.bar.SetCurrent(int64(frac * barSteps))
}

// finish ends the bar at its last state, full when the phase completed.
func (p *phaseBar) finish() {
	p.mu.Lock()
	if p.s.total > 0 {
		p.frac = 1
	}
	p.mu.Unlock()
	p.bar.SetCurrent(barSteps)
	p.bar.SetTotal(-1, true)
	p.bar.Wait()
}

func (p *phaseBar) label() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.s.label
}

func (p *phaseBar) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.s
	unit := func(n int64) string { return count(n) }
	if s.bytes {
		unit = humanBytes
	}
	var b strings.Builder
	if s.total > 0 {
		fmt.Fprintf(&b, "%3.0f%%  %s / %s", p.frac*100, unit(s.done), unit(max(s.total, s.done)))
		if s.extra != "" {
			b.WriteString(",")
		}
	} else {
		b.WriteString(unit(s.done))
	}
	if s.extra != "" {
		b.WriteString(" " + s.extra)
	}
	if p.rate > 0 {
		fmt.Fprintf(&b, "  %s/s", unit(int64(p.rate)))
		if s.total > s.done && p.frac < 1 {
			left := time.Duration(float64(s.total-s.done) / p.rate * float64(time.Second))
			fmt.Fprintf(&b, "  ETA %s", left.Round(time.Second))
		}
	}
	return b.String()
}

// count formats an integer with thousands separators (naming.Count).
func count(n int64) string { return naming.Count(n) }

// counted is a count and a noun, singular for one (naming.Counted).
func counted(n int64, one, many string) string { return naming.Counted(n, one, many) }

// humanBytes formats a size with a binary unit (naming.HumanBytes).
func humanBytes(n int64) string { return naming.HumanBytes(n) }
