package thumb

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
)

// acquireAsync starts Acquire(n) in a goroutine; the channel gets its result.
func acquireAsync(ctx context.Context, b *Budget, n int64) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- b.Acquire(ctx, n) }()
	return ch
}

// waitWaiting waits until b has n waiting requests.
func waitWaiting(t *testing.T, b *Budget, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, _, w := b.stats(); w == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never saw %d waiters", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// mustPend checks that ch has no result yet.
func mustPend(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s: returned (%v) but should block", what, err)
	case <-time.After(20 * time.Millisecond):
	}
}

// mustGet waits for the result in ch.
func mustGet(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still blocked", what)
		return nil
	}
}

func TestBudgetBasics(t *testing.T) {
	ctx := context.Background()
	b := NewBudget(100)
	if err := b.Acquire(ctx, 60); err != nil {
		t.Fatal(err)
	}
	if err := b.Acquire(ctx, 40); err != nil {
		t.Fatal(err)
	}
	third := acquireAsync(ctx, b, 1)
	mustPend(t, third, "acquire beyond the budget")
	b.Release(40)
	if err := mustGet(t, third, "acquire after release"); err != nil {
		t.Fatal(err)
	}
	b.Release(60)
	b.Release(1)
	if used, peak, waiting := b.stats(); used != 0 || peak != 100 || waiting != 0 {
		t.Errorf("stats = %d, %d, %d; want 0, 100, 0", used, peak, waiting)
	}
	if err := b.Acquire(ctx, 0); err != nil {
		t.Errorf("Acquire(0): %v", err)
	}
}

func TestBudgetOversize(t *testing.T) {
	ctx := context.Background()
	b := NewBudget(100)
	// Alone, a request above the whole budget is granted.
	if err := b.Acquire(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	small := acquireAsync(ctx, b, 1)
	mustPend(t, small, "acquire while an oversize request holds")
	b.Release(1000)
	if err := mustGet(t, small, "small"); err != nil {
		t.Fatal(err)
	}
	// While anything is held, an oversize request waits.
	big := acquireAsync(ctx, b, 1000)
	mustPend(t, big, "oversize while something is held")
	b.Release(1)
	if err := mustGet(t, big, "oversize once nothing is held"); err != nil {
		t.Fatal(err)
	}
	b.Release(1000)
}

func TestBudgetFIFO(t *testing.T) {
	ctx := context.Background()
	b := NewBudget(100)
	if err := b.Acquire(ctx, 50); err != nil {
		t.Fatal(err)
	}
	big := acquireAsync(ctx, b, 100)
	waitWaiting(t, b, 1)
	// A small request that would fit must queue behind the big one.
	small := acquireAsync(ctx, b, 10)
	waitWaiting(t, b, 2)
	mustPend(t, small, "small behind big")
	b.Release(50)
	if err := mustGet(t, big, "big"); err != nil {
		t.Fatal(err)
	}
	mustPend(t, small, "small while big holds all")
	b.Release(100)
	if err := mustGet(t, small, "small"); err != nil {
		t.Fatal(err)
	}
	b.Release(10)
}

func TestBudgetCancel(t *testing.T) {
	b := NewBudget(100)
	if err := b.Acquire(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	blocked := acquireAsync(ctx, b, 50)
	waitWaiting(t, b, 1)
	// A cancelled head of the queue must not block the requests behind it.
	behind := acquireAsync(context.Background(), b, 10)
	waitWaiting(t, b, 2)
	cancel()
	if err := mustGet(t, blocked, "cancelled"); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	b.Release(95)
	if err := mustGet(t, behind, "behind the cancelled one"); err != nil {
		t.Fatal(err)
	}
	b.Release(15)
	if used, _, waiting := b.stats(); used != 0 || waiting != 0 {
		t.Errorf("used %d, waiting %d after all released", used, waiting)
	}
}

func TestBudgetStress(t *testing.T) {
	b := NewBudget(1000)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			for j := range 200 {
				n := int64((i*7+j*13)%300 + 1)
				if i%10 == 0 && j%50 == 0 {
					n = 1500 // oversize now and then
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(j%3)*time.Millisecond)
				if j%5 != 0 {
					ctx, cancel = context.WithCancel(context.Background())
				}
				if err := b.Acquire(ctx, n); err == nil {
					if used, _, _ := b.stats(); used > 1000 && used != n {
						t.Errorf("used %d exceeds the budget with %d held by us", used, n)
					}
					b.Release(n)
				}
				cancel()
			}
		})
	}
	testenv.Returns(t, time.Minute, "every Acquire and Release of the stress", wg.Wait)
	if used, _, waiting := b.stats(); used != 0 || waiting != 0 {
		t.Errorf("used %d, waiting %d at the end", used, waiting)
	}
}

func TestBudgetNilAndMisuse(t *testing.T) {
	var b *Budget
	if err := b.Acquire(context.Background(), 1<<40); err != nil {
		t.Errorf("nil budget: %v", err)
	}
	b.Release(1 << 40)
	defer func() {
		if recover() == nil {
			t.Error("releasing more than held did not panic")
		}
	}()
	NewBudget(10).Release(1)
}
