package store

import (
	"database/sql/driver"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite"
)

// The store's notion of "now". Lease deadlines, heartbeats and every other
// stamp are computed inside the SQL statement that writes them, after the
// write lock is taken: a deadline computed before waiting for the lock
// could already be in the past when it is written. The statements read the
// clock through the SQL function dupefs_now_ms(), which calls clock below,
// so a test can move time instead of sleeping on the wall clock.

var clock atomic.Pointer[func() time.Time]

func init() {
	sqlite.MustRegisterScalarFunction("dupefs_now_ms", 0,
		func(*sqlite.FunctionContext, []driver.Value) (driver.Value, error) {
			return now().UnixMilli(), nil
		})
}

// now is the store's clock: the wall clock unless SetClock replaced it.
func now() time.Time {
	if f := clock.Load(); f != nil {
		return (*f)()
	}
	return time.Now()
}

// nowSQL is the SQL clock in unix milliseconds (see now).
const nowSQL = "dupefs_now_ms()"

// SetClock makes the store of this process read time from f (tests move
// time with it instead of sleeping); the returned function puts the wall
// clock back. It affects every DB of the process.
func SetClock(f func() time.Time) (restore func()) {
	prev := clock.Swap(&f)
	return func() { clock.Store(prev) }
}

// FakeClock is a clock that stands still until Advance moves it, for tests
// of leases and retries.
type FakeClock struct{ t atomic.Int64 }

// NewFakeClock starts a clock at start.
func NewFakeClock(start time.Time) *FakeClock {
	c := &FakeClock{}
	c.t.Store(start.UnixNano())
	return c
}

// Now is the clock's time.
func (c *FakeClock) Now() time.Time { return time.Unix(0, c.t.Load()) }

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) { c.t.Add(int64(d)) }
