package store

import (
	"os"
	"testing"
	"time"
)

// TestCheckpointerCopiesCommitsBack writes a few MB in commits, far below
// the writer's own checkpoint threshold, and waits for the pages to reach
// the database file: only the background checkpointer puts them there.
func TestCheckpointerCopiesCommitsBack(t *testing.T) {
	db := openTest(t)
	st, err := os.Stat(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	before := st.Size()
	const n = 4 << 20
	if n/4096 >= writerAutoCheckpoint {
		t.Fatalf("the test writes %d pages, past the writer's own threshold %d", n/4096, writerAutoCheckpoint)
	}
	grow(t, db, n)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := os.Stat(db.Path())
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() >= before+n*3/4 {
			break
		}
		if time.Now().After(deadline) {
			wal, _ := db.Maint().WALSize()
			t.Fatalf("database file %d bytes (was %d), WAL %d bytes: commits not checkpointed", st.Size(), before, wal)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCloseStopsTheCheckpointer closes an index right after a commit: the
// checkpointer ends with it (Close waits for it), and the index opens again.
func TestCloseStopsTheCheckpointer(t *testing.T) {
	db := openTest(t)
	grow(t, db, 1<<20)
	c := db.ckpt
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	default:
		t.Fatal("the checkpointer still runs after Close")
	}
}
