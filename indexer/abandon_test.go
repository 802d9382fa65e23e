package indexer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store"
)

// endRefused is a queue whose jobs' ends cannot be written.
type endRefused struct {
	JobQueue
	err error
}

func (q endRefused) Finish(context.Context, store.Lease, string, string, string, time.Duration) error {
	return q.err
}

// A job that stopped on a full disk, whose end the full disk refuses too,
// is told once (it was told twice, the second line the end's failure);
// the end is kept to be written later either way, and a failure of
// another kind is told beside the job's.
func TestAbandonTellsOneKindOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	full := fmt.Errorf("commit: %w: database or disk is full (13)", store.ErrDiskFull)
	for _, c := range []struct {
		name      string
		job, end  error
		wantLines int
	}{
		{"both a full disk", fmt.Errorf("add files: %w: database or disk is full (13)", store.ErrDiskFull), full, 1},
		{"the end only", errors.New("read /x: input/output error"), full, 2},
		{"another kind", fmt.Errorf("add files: %w: database or disk is full (13)", store.ErrDiskFull),
			fmt.Errorf("end job: %w", store.ErrBusy), 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			idx := IndexOf(e.db)
			idx.JobQueue = endRefused{idx.JobQueue, c.end}
			ix := New(idx, e.config())
			err := ix.abandon(ctx, store.Lease{ID: 7, Owner: "w"}, c.job)
			if !errors.Is(err, c.job) {
				t.Fatalf("abandon: %v, want the job's error", err)
			}
			if n := len(strings.Split(err.Error(), "\n")); n != c.wantLines {
				t.Errorf("abandon told %d lines, want %d:\n%v", n, c.wantLines, err)
			}
			if len(ix.unfinished) != 1 || ix.unfinished[0].lease.ID != 7 {
				t.Errorf("the job's end is not kept for later: %+v", ix.unfinished)
			}
		})
	}
}
