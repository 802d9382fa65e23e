package thumb

import (
	"container/list"
	"context"
	"sync"
)

// Budget bounds the memory that image decoding may use at once across
// goroutines: Acquire blocks until n bytes are available (or ctx ends). A
// single request larger than the whole budget is allowed only when nothing
// else holds any (so one big image can still decode, alone).
//
// Waiters are served in FIFO order: a big request at the head of the queue
// is not starved by a stream of small ones behind it. A Budget is safe for
// concurrent use. Its methods on a nil *Budget do nothing and never block.
type Budget struct {
	mu      sync.Mutex
	size    int64
	used    int64
	waiters list.List // of *budgetWaiter, oldest first
	peak    int64     // highest used seen, for tests
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed when the bytes are granted
}

// NewBudget returns a Budget of the given number of bytes. A size below 1 is
// taken as 1, so that requests are serialised (each runs alone).
func NewBudget(bytes int64) *Budget {
	if bytes < 1 {
		bytes = 1
	}
	return &Budget{size: bytes}
}

// fits reports whether n bytes can be granted now. b.mu must be held.
func (b *Budget) fits(n int64) bool {
	return b.used == 0 || b.used+n <= b.size
}

// grant records n bytes as held. b.mu must be held.
func (b *Budget) grant(n int64) {
	b.used += n
	if b.used > b.peak {
		b.peak = b.used
	}
}

// Acquire blocks until n bytes of the budget are available and takes them,
// or until ctx ends, in which case it takes nothing and returns ctx.Err().
// A request larger than the whole budget is granted once nothing is held.
// Acquire of n <= 0, or on a nil Budget, takes nothing and returns
// ctx.Err() at once. Every successful Acquire must be
// matched by a Release of the same n.
func (b *Budget) Acquire(ctx context.Context, n int64) error {
	if b == nil || n <= 0 {
		return ctx.Err()
	}
	b.mu.Lock()
	if b.waiters.Len() == 0 && b.fits(n) {
		b.grant(n)
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	elem := b.waiters.PushBack(w)
	b.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.ready:
			// Granted while we were being cancelled: give the bytes back.
			b.used -= n
		default:
			b.waiters.Remove(elem)
		}
		// Either way the queue head may now be servable.
		b.notifyLocked()
		b.mu.Unlock()
		return ctx.Err()
	}
}

// Release gives back n bytes taken by Acquire and wakes the waiters that now
// fit. Releasing more than is held is a programming error and panics.
func (b *Budget) Release(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.used {
		panic("thumb: Budget.Release of more bytes than held")
	}
	b.used -= n
	b.notifyLocked()
}

// notifyLocked grants the waiting requests that fit, in FIFO order, stopping
// at the first that does not. b.mu must be held.
func (b *Budget) notifyLocked() {
	for {
		front := b.waiters.Front()
		if front == nil {
			return
		}
		w := front.Value.(*budgetWaiter)
		if !b.fits(w.n) {
			return
		}
		b.grant(w.n)
		b.waiters.Remove(front)
		close(w.ready)
	}
}

// stats returns the bytes held now, the highest ever held and the number of
// waiting requests; for tests.
func (b *Budget) stats() (used, peak int64, waiting int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.peak, b.waiters.Len()
}
