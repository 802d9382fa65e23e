package indexer

// The hash run's writer: results are recorded in fenced batches while the
// readers go on.

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/dupefs/dupefs/store"
)

// write records results in fenced batches. It never stops receiving: while
// one batch is being written, the next one gathers, so the readers never
// wait for the disk holding the index. A batch is written once it is
// BatchDuration old or maxHashBatch long, or when the previous write ends.
func (h *hashRun) write(ctx context.Context, results <-chan result) error {
	var pending []result
	var first time.Time
	busy := false
	done := make(chan error, 1)
	start := func() {
		b := pending
		pending, busy = nil, true
		go func() { done <- h.flush(ctx, b) }()
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var failed error
	for results != nil || busy {
		select {
		case r, ok := <-results:
			if !ok {
				results = nil
				continue
			}
			if failed != nil {
				continue // drain
			}
			if len(pending) == 0 {
				first = time.Now()
				timer.Reset(h.ix.cfg.BatchDuration)
			}
			pending = append(pending, r)
			if !busy && len(pending) >= maxHashBatch {
				start()
			}
		case err := <-done:
			busy = false
			if err != nil && failed == nil {
				failed = err
			}
			if failed == nil && len(pending) > 0 && time.Since(first) >= h.ix.cfg.BatchDuration {
				start()
			}
		case <-timer.C:
			if !busy && failed == nil && len(pending) > 0 {
				start()
			}
		}
	}
	if failed != nil {
		return failed
	}
	return h.flush(ctx, pending)
}

// maxHashBatch bounds the results one write transaction records.
const maxHashBatch = 20000

// flush records a batch of results in one fenced write, in row order: the
// B-tree pages are then visited once each, not at random.
func (h *hashRun) flush(ctx context.Context, batch []result) error {
	if len(batch) == 0 {
		return nil
	}
	type one struct {
		row *store.HashRow
		r   *result
	}
	var all []one
	for i := range batch {
		for _, row := range batch[i].rows {
			all = append(all, one{row, &batch[i]})
		}
	}
	slices.SortFunc(all, func(a, b one) int { return cmp.Compare(a.row.ID, b.row.ID) })
	counts := map[int64]store.RootHashCounts{}
	for _, r := range batch {
		if r.read && len(r.rows) > 0 {
			c := counts[r.rows[0].RootID]
			c.Files++
			c.Bytes += r.bytes
			counts[r.rows[0].RootID] = c
		}
	}
	err := h.ix.db.Write(ctx, func(tx *store.Tx) error {
		if err := tx.Fence(h.lease); err != nil {
			return err
		}
		if err := tx.CreditHashRun(h.started, counts); err != nil {
			return err
		}
		b, err := tx.HashBatch(h.algo)
		if err != nil {
			return err
		}
		for _, o := range all {
			if err := h.record(b, o.r, o.row); err != nil {
				return err
			}
		}
		return b.Close()
	})
	if err != nil {
		return err
	}
	h.ix.cfg.Progress.HashFilesDone.Add(int64(len(all)))
	h.mu.Lock()
	for id, c := range counts {
		t := h.perRoot[id]
		t.Files += c.Files
		t.Bytes += c.Bytes
		h.perRoot[id] = t
	}
	h.mu.Unlock()
	return nil
}

func (h *hashRun) record(b *store.HashBatch, r *result, row *store.HashRow) error {
	switch r.outcome {
	case gotPrefix:
		return b.Prefix(row, r.prefix.Int64)
	case gotContent:
		return b.Content(row, r.prefix, r.sum)
	case gotFailure:
		return b.Fail(row, r.msg)
	case gotChange:
		return b.Requeue(row, r.msg)
	}
	return nil
}
