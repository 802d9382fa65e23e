package fusefs

import (
	"context"
	"sync/atomic"
	"testing"
)

// missedOnce is a watcher that says once that commits may have been
// missed (as the listener of a PostgreSQL index does after the server
// restarted), and never that anyone committed.
type missedOnce struct{ said atomic.Bool }

func (m *missedOnce) Changed(context.Context) (bool, error) { return false, nil }
func (m *missedOnce) Missed() bool                          { return m.said.CompareAndSwap(false, true) }
func (m *missedOnce) Close() error                          { return nil }

// When commits may have gone untold, the view forgets what it kept of the
// index (a group's paths, whatever its generation stamps) though no
// commit is said.
func TestMissedCommitsDropEveryCache(t *testing.T) {
	tf := mountTest(t, nil)
	tf.add("/data", copyOf{"/data/a", "x", 10, 1, 1}, copyOf{"/data/b", "x", 10, 2, 1})
	g, err := tf.db.View().GroupsPage(context.Background(), 0, 10)
	if err != nil || len(g) != 1 {
		t.Fatalf("groups: %v %v", g, err)
	}
	eventually(t, "the group's commit seen", func() bool { return tf.fs.appliedSeq.Load() > 0 })
	if _, err := tf.fs.groupPaths(g[0].ID); err != nil {
		t.Fatal(err)
	}
	gen := tf.fs.ends.stamp()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A loop that has seen every change so far.
	w0, s, err := tf.fs.startWatch()
	if err != nil {
		t.Fatal(err)
	}
	w0.Close()
	w := &missedOnce{}
	done := make(chan struct{})
	go func() { tf.fs.watch(ctx, w, s); close(done) }()
	eventually(t, "the view told of missed commits", func() bool { return w.said.Load() && tf.fs.ends.stamp() != gen })
	cancel()
	<-done
	tf.fs.access.mu.Lock()
	_, kept := tf.fs.access.paths[g[0].ID]
	tf.fs.access.mu.Unlock()
	if kept {
		t.Error("the group's paths were kept")
	}
}
