package indexer

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store"
)

// TestMutateDuringIndex changes a tree all through an index — files
// created, deleted, renamed, rewritten at the same size, truncated, hard
// linked and unlinked — then runs one more index and checks that it gives
// exactly the groups of a fresh index of the final tree, with nothing
// queued or stuck, for 20 seeds.
func TestMutateDuringIndex(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			e := newEnv(t)
			m := newMutator(e.dir, seed)
			for i := 0; i < 120; i++ {
				m.create()
			}
			e.addRoot(store.RootSpec{})
			cfg := e.config()
			// Slow reads, small batches: the run lasts long enough for
			// changes to land in every phase of it.
			cfg.MaxBytesPerSec = 2 << 20
			cfg.BatchDuration = 10 * time.Millisecond
			done := make(chan error, 1)
			go func() { done <- New(IndexOf(e.db), cfg).Run(context.Background()) }()
			ops := 0
			tooLong := time.After(2 * time.Minute)
		loop:
			for {
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
					break loop
				case <-tooLong:
					t.Fatalf("the index run has not ended after 2 minutes (%d changes)", ops)
				default:
				}
				m.step()
				ops++
				time.Sleep(time.Duration(m.rnd.Intn(3)) * time.Millisecond)
			}
			if ops < 20 {
				t.Fatalf("only %d changes landed during the run: it was too short to test anything", ops)
			}
			t.Logf("%d changes during the run", ops)
			e.run()
			e.settled()
			e.matchesFresh()
		})
	}
}

// mutator changes a tree at random: a pool of contents (some of one size
// with different bytes), in a few folders.
type mutator struct {
	dir      string
	rnd      *rand.Rand
	contents [][]byte
	files    []string // relative paths that may exist
	n        int
}

func newMutator(dir string, seed int64) *mutator {
	m := &mutator{dir: dir, rnd: rand.New(rand.NewSource(seed))}
	for i := 0; i < 24; i++ {
		size := 1 + m.rnd.Intn(40000)
		if i%4 == 1 {
			size = len(m.contents[i-1]) // same size, other bytes
		}
		b := make([]byte, size)
		m.rnd.Read(b)
		m.contents = append(m.contents, b)
	}
	return m
}

func (m *mutator) path(rel string) string { return filepath.Join(m.dir, rel) }

func (m *mutator) pick() string {
	if len(m.files) == 0 {
		return ""
	}
	return m.files[m.rnd.Intn(len(m.files))]
}

func (m *mutator) newName() string {
	m.n++
	return fmt.Sprintf("d%d/f%04d", m.rnd.Intn(6), m.n)
}

func (m *mutator) create() {
	rel := m.newName()
	os.MkdirAll(filepath.Dir(m.path(rel)), 0o755)
	os.WriteFile(m.path(rel), m.contents[m.rnd.Intn(len(m.contents))], 0o644)
	m.files = append(m.files, rel)
}

// step makes one change of a random kind.
func (m *mutator) step() {
	rel := m.pick()
	if rel == "" {
		m.create()
		return
	}
	switch m.rnd.Intn(7) {
	case 0:
		m.create()
	case 1: // delete (or unlink one link of several)
		os.Remove(m.path(rel))
	case 2: // rename, maybe to another folder
		to := m.newName()
		os.MkdirAll(filepath.Dir(m.path(to)), 0o755)
		if os.Rename(m.path(rel), m.path(to)) == nil {
			m.files = append(m.files, to)
		}
	case 3: // rewrite at the same size with other bytes, in place
		if fi, err := os.Stat(m.path(rel)); err == nil && fi.Size() > 0 {
			b := make([]byte, fi.Size())
			m.rnd.Read(b)
			if f, err := os.OpenFile(m.path(rel), os.O_WRONLY, 0); err == nil {
				f.WriteAt(b, 0)
				f.Close()
			}
		}
	case 4: // rewrite with another content of the pool
		os.WriteFile(m.path(rel), m.contents[m.rnd.Intn(len(m.contents))], 0o644)
	case 5: // truncate
		if fi, err := os.Stat(m.path(rel)); err == nil {
			os.Truncate(m.path(rel), fi.Size()/2)
		}
	case 6: // hard link
		to := m.newName()
		os.MkdirAll(filepath.Dir(m.path(to)), 0o755)
		if os.Link(m.path(rel), m.path(to)) == nil {
			m.files = append(m.files, to)
		}
	}
}
