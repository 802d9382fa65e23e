package indexer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/internal/pgtest"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// openHostIndex opens the PostgreSQL index at url as host name.
func openHostIndex(tb testing.TB, url, name string) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), store.Options{Path: url, Host: store.Host{Name: name, MachineID: "m-" + name}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// addHostRoot adds root to the roots of db's host.
func addHostRoot(tb testing.TB, db *store.DB, root string) {
	tb.Helper()
	if _, _, err := db.Files().AddRoot(context.Background(), store.RootSpec{Path: root}, false); err != nil {
		tb.Fatal(err)
	}
}

// besideFullPlan is an Index whose FullHashPlan calls beside once, after
// the plan is made: another host's run goes on there, beside this one's.
type besideFullPlan struct {
	FileRows
	beside func()
}

func (b *besideFullPlan) FullHashPlan(ctx context.Context, sizes []int64) ([]store.FullHashPair, error) {
	pairs, err := b.FileRows.FullHashPlan(ctx, sizes)
	if b.beside != nil {
		b.beside()
		b.beside = nil
	}
	return pairs, err
}

// A hash run of another host that ends while this host's run is under way
// may leave a file of this host owed (hashed in part, now sharing its
// prefix with the other host's file read whole): this host's Run looks at
// its queue once more, and ends with the group.
func TestRunTakesInWhatAnotherHostsRunOwedIt(t *testing.T) {
	url := pgtest.URL(t)
	nas, laptop := openHostIndex(t, url, "nas"), openHostIndex(t, url, "laptop")
	content := big(3, 256<<10)
	top := t.TempDir()
	there, here := filepath.Join(top, "nas"), filepath.Join(top, "laptop")
	tree(t, there, map[string]string{"a.bin": content})
	tree(t, here, map[string]string{"b.bin": content})
	ctx := context.Background()
	addHostRoot(t, nas, there)
	addHostRoot(t, laptop, here)
	// The nas indexes its file alone (of a size of its own then).
	if err := New(IndexOf(nas), Config{Workers: 1}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	// The laptop's run reads its file's first and last blocks; the nas's
	// run, beside it, then reads its own file whole (and waits for the
	// laptop's to end).
	nasDone := make(chan error, 1)
	besideRan := false
	idx := IndexOf(laptop)
	idx.FileRows = &besideFullPlan{FileRows: idx.FileRows, beside: func() {
		besideRan = true
		go func() {
			nasDone <- New(IndexOf(nas), Config{Workers: 1, PollInterval: 10 * time.Millisecond}).Drain(ctx)
		}()
		testenv.Eventually(t, time.Minute, "the nas's run to read its file whole", func() bool {
			f, err := nas.Files().FileByPath(ctx, filepath.Join(there, "a.bin"))
			return err == nil && f.Hash != nil
		})
	}}
	err := New(idx, Config{Workers: 1, PollInterval: 10 * time.Millisecond}).Run(ctx)
	if besideRan {
		if nerr := <-nasDone; nerr != nil {
			t.Fatalf("the nas's run: %v", nerr)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if !besideRan {
		t.Fatal("the laptop's run never planned a full read: the nas's run never went on beside it")
	}
	tot, err := laptop.Totals(ctx)
	if err != nil || tot.Groups != 1 || tot.Queued != 0 {
		var rows []string
		for _, p := range []string{filepath.Join(there, "a.bin"), filepath.Join(here, "b.bin")} {
			for _, db := range []*store.DB{nas, laptop} {
				if f, err := db.Files().FileByPath(ctx, p); err == nil {
					rows = append(rows, fmt.Sprintf("%s on %s: %s, hashed %v", p, db.Host().Name, f.Status, f.Hash != nil))
				}
			}
		}
		jobs, _ := laptop.Jobs().ActiveJobs(ctx)
		t.Fatalf("after both runs: %d groups, %d files queued (%v); want the one group, nothing queued\n%s\njobs active: %+v",
			tot.Groups, tot.Queued, err, strings.Join(rows, "\n"), jobs)
	}
}

// check counts no copy another host holds on a network file system: that
// host may reach this one's files there (the nas's /srv/photos/a, the
// laptop's /mnt/nas/photos/a: one file), so it is no copy to rely on. One
// on a local root of the other host is.
func TestCheckCountsNoRemoteNetworkCopy(t *testing.T) {
	url := pgtest.URL(t)
	nas, laptop := openHostIndex(t, url, "nas"), openHostIndex(t, url, "laptop")
	ctx := context.Background()
	top := t.TempDir()
	photo := filepath.Join(top, "photos", "a.jpg")
	tree(t, filepath.Dir(photo), map[string]string{"a.jpg": "the only photo"})
	h := naming.NewHash(nas.HashAlgo())
	h.Write([]byte("the only photo"))
	sum := h.Sum(nil)
	for _, r := range []struct {
		root    string
		network bool
	}{{"/mnt/nas", true}, {"/home/backup", false}} {
		rt, _, err := laptop.Files().AddRoot(ctx, store.RootSpec{Path: r.root, Network: r.network}, false)
		if err != nil {
			t.Fatal(err)
		}
		err = laptop.Write(ctx, func(tx *store.Tx) error {
			b, err := tx.ScanBatch(1, laptop.HashAlgo())
			if err != nil {
				return err
			}
			defer b.Close()
			d, err := b.AddFolder(rt.ID, 0, r.root, "", nil)
			if err != nil {
				return err
			}
			return b.AddFile(rt.ID, d, store.FileStat{Name: "a.jpg", Size: int64(len("the only photo")), Dev: 1, Ino: 1, Nlink: 1,
				Hash: &store.FileHash{Status: store.HashDone, Content: sum}})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	res, err := Check(ctx, nas.Files(), photo)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Matches, []string{"laptop:/home/backup/a.jpg"}) || !slices.Equal(res.Unsure, []string{"laptop:/mnt/nas/a.jpg"}) {
		t.Fatalf("check on the nas: copies %q, unsure %q; want the laptop's local copy, and its copy on a network file system unsure",
			res.Matches, res.Unsure)
	}
}

// countReuse is a FileRows that counts the lookups of hashes to reuse.
type countReuse struct {
	FileRows
	asked atomic.Int64
}

func (c *countReuse) ReusableHash(ctx context.Context, size, mtimeNS int64, dev, ino uint64) (*store.FileHash, error) {
	c.asked.Add(1)
	return c.FileRows.ReusableHash(ctx, size, mtimeNS, dev, ino)
}

func (c *countReuse) ReusableHashes(ctx context.Context, stamps []store.Stamp) (map[store.Stamp]*store.FileHash, error) {
	c.asked.Add(1)
	return c.FileRows.ReusableHashes(ctx, stamps)
}

// A host's first index into an index other hosts fill holds no hash of
// its own files to reuse: its walk asks the index for none (a round trip
// per folder). Once it has, a rescan asks again, and a hard link made
// since takes its inode's hash.
func TestAHostsFirstIndexAsksForNoHashToReuse(t *testing.T) {
	url := pgtest.URL(t)
	nas, laptop := openHostIndex(t, url, "nas"), openHostIndex(t, url, "laptop")
	ctx := context.Background()
	top := t.TempDir()
	there, here := filepath.Join(top, "nas"), filepath.Join(top, "laptop")
	tree(t, there, map[string]string{"a": "shared by both hosts", "b": "the nas's own"})
	files := map[string]string{}
	for i := range 6 {
		// Files of one size in every folder: the walk reads them.
		files[fmt.Sprintf("d%d/same-size", i)] = fmt.Sprintf("content %03d", i)
		files[fmt.Sprintf("d%d/e%d/copy", i, i)] = "shared by both hosts"
	}
	tree(t, here, files)
	addHostRoot(t, nas, there)
	addHostRoot(t, laptop, here)
	if err := New(IndexOf(nas), Config{Workers: 2}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	idx := IndexOf(laptop)
	count := &countReuse{FileRows: idx.FileRows}
	idx.FileRows = count
	if err := New(idx, Config{Workers: 2}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count.asked.Load(); n != 0 {
		t.Errorf("the laptop's first index asked the index %d times for hashes to reuse, want none", n)
	}
	if tot, err := laptop.Totals(ctx); err != nil || tot.Groups != 1 {
		t.Fatalf("after both hosts' first index: %+v, %v; want one group (the shared content, on both)", tot, err)
	}

	// A second root of the laptop's, with a hard link to a file read
	// whole: now its walk looks the inode up, and takes its hash.
	second := filepath.Join(top, "laptop2")
	linked := filepath.Join(second, "link")
	// Another file of the link's size, so the walk reads them.
	tree(t, second, map[string]string{"of-its-size": "another 20-byte text"})
	if err := os.Link(filepath.Join(here, "d0", "e0", "copy"), linked); err != nil {
		t.Fatal(err)
	}
	addHostRoot(t, laptop, second)
	if err := New(idx, Config{Workers: 2}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	if count.asked.Load() == 0 {
		t.Error("the index of a second root asked the index for no hash to reuse")
	}
	f, err := laptop.Files().FileByPath(ctx, linked)
	if err != nil || f.Hash == nil || f.Status != store.HashDone {
		t.Fatalf("the hard link in the second root: %+v, %v; want it hashed", f, err)
	}
}
