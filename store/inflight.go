package store

// inflight is one write sent on a transaction's session while its caller
// goes on (a scan's COPY, a fold's batch of sums). The session runs one
// statement at a time: every other use of it waits for the write first.
type inflight struct {
	done chan error // the write's outcome (nil: none under way)
}

// start runs write in the background; the caller waited for the last.
func (f *inflight) start(write func() error) {
	done := make(chan error, 1)
	f.done = done
	go func() { done <- write() }()
}

// wait waits for the write under way, if any, and returns its error.
func (f *inflight) wait() error {
	if f.done == nil {
		return nil
	}
	err := <-f.done
	f.done = nil
	return err
}
