package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/dupefs/dupefs/indexer"
)

// progressBar redraws one status line on a terminal from the indexer's
// Progress: what it does, counts, rate and ETA. It draws nothing when the
// output is not a terminal.
type progressBar struct {
	out   io.Writer
	fd    int
	p     *indexer.Progress
	start time.Time

	stop chan struct{}
	done sync.WaitGroup

	// rate estimation over the last few seconds
	lastAt          time.Time
	lastCount       int64
	lastBytes       int64
	rate, byteRate  float64
	lastPhaseSample string
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// startProgress starts redrawing every 200ms; nil when not on a terminal.
func startProgress(p *indexer.Progress) *progressBar {
	if !isTerminal(os.Stderr) {
		return nil
	}
	b := &progressBar{out: os.Stderr, fd: int(os.Stderr.Fd()), p: p, start: time.Now(), stop: make(chan struct{})}
	b.done.Add(1)
	go func() {
		defer b.done.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				b.clear()
				return
			case <-t.C:
				b.draw()
			}
		}
	}()
	return b
}

// Stop clears the line. Safe on nil.
func (b *progressBar) Stop() {
	if b == nil {
		return
	}
	close(b.stop)
	b.done.Wait()
}

func (b *progressBar) width() int {
	w, _, err := term.GetSize(b.fd)
	if err != nil || w < 40 {
		return 80
	}
	return w
}

func (b *progressBar) clear() { fmt.Fprint(b.out, "\r\x1b[K") }

// sample updates the smoothed rates of count and bytes.
func (b *progressBar) sample(phase string, count, bytes int64) {
	now := time.Now()
	if phase != b.lastPhaseSample || b.lastAt.IsZero() {
		b.lastPhaseSample, b.lastAt, b.lastCount, b.lastBytes, b.rate, b.byteRate = phase, now, count, bytes, 0, 0
		return
	}
	dt := now.Sub(b.lastAt).Seconds()
	if dt < 0.5 {
		return
	}
	r, br := float64(count-b.lastCount)/dt, float64(bytes-b.lastBytes)/dt
	if b.rate == 0 {
		b.rate, b.byteRate = r, br
	} else {
		b.rate, b.byteRate = 0.7*b.rate+0.3*r, 0.7*b.byteRate+0.3*br
	}
	b.lastAt, b.lastCount, b.lastBytes = now, count, bytes
}

func (b *progressBar) draw() {
	phase, detail := b.p.Phase()
	var line string
	switch phase {
	case "scan":
		files := b.p.FilesSeen.Load()
		b.sample(phase, files, 0)
		line = fmt.Sprintf("scanning %s  %s files  %s folders  %s/s", detail, count(files),
			count(b.p.FoldersSeen.Load()), count(int64(b.rate)))
		if exp := b.p.ScanExpected.Load(); exp > 0 && files < exp {
			line += "  " + bar(float64(files)/float64(exp), 20) + eta(float64(exp-files), b.rate)
		}
	case "hash":
		total, done := b.p.HashFiles.Load(), b.p.HashFilesDone.Load()
		read := b.p.BytesRead.Load()
		b.sample(phase, done, read)
		line = "hashing  "
		if total > 0 {
			line += bar(float64(done)/float64(total), 20) + "  "
		}
		line += fmt.Sprintf("%s/%s files  %s read  %s/s", count(done), count(total), humanBytes(read),
			humanBytes(int64(b.byteRate)))
		if total > done {
			line += eta(float64(total-done), b.rate)
		}
	case "thumbs":
		made, failed := b.p.ThumbsMade.Load(), b.p.ThumbsFailed.Load()
		b.sample(phase, made+failed, 0)
		line = fmt.Sprintf("thumbnails  %s made  %s failed  %.1f/s", count(made), count(failed), b.rate)
	case "wait":
		line = "waiting for " + detail
	default:
		return
	}
	if w := b.width() - 1; len(line) > w {
		line = line[:w]
	}
	fmt.Fprint(b.out, "\r\x1b[K"+line)
}

// bar draws [=====>    ] 45%.
func bar(frac float64, width int) string {
	frac = max(0, min(1, frac))
	n := int(frac * float64(width))
	s := strings.Repeat("=", n)
	if n < width {
		s += ">" + strings.Repeat(" ", width-n-1)
	}
	return fmt.Sprintf("[%s] %3.0f%%", s, frac*100)
}

// eta formats the time left for remaining items at rate per second.
func eta(remaining, rate float64) string {
	if rate <= 0 {
		return ""
	}
	d := time.Duration(remaining / rate * float64(time.Second)).Round(time.Second)
	return "  ETA " + d.String()
}

// count formats an integer with thousands separators.
func count(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
