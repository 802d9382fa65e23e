package indexer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// edit returns content with the byte at off changed.
func edit(content string, off int, x byte) string {
	b := []byte(content)
	b[off] ^= x
	return string(b)
}

// wantTrueHashes fails unless every regular file of the tree has, in the
// index, the hash of its own bytes (read again here) or no content hash.
func (e *env) wantTrueHashes(algo string) {
	e.tb.Helper()
	n := 0
	var stamps []store.Stamp
	one := map[store.Stamp]*store.FileHash{}
	filepath.Walk(e.dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			e.tb.Fatal(err)
		}
		got, err := e.db.Files().ReusableHash(context.Background(), st.Size, st.Mtim.Nano(), st.Dev, st.Ino)
		if err != nil {
			e.tb.Fatal(err)
		}
		stamp := store.Stamp{Size: st.Size, MtimeNS: st.Mtim.Nano(), Dev: st.Dev, Ino: st.Ino}
		stamps = append(stamps, stamp)
		one[stamp] = got
		if got == nil || got.Content == nil {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			e.tb.Fatal(err)
		}
		h := naming.NewHash(algo)
		h.Write(b)
		if want := h.Sum(nil); !bytes.Equal(got.Content, want) {
			e.tb.Errorf("%s: recorded %x, its bytes hash to %x", p, got.Content, want)
		}
		n++
		return nil
	})
	if n == 0 {
		e.tb.Fatal("no file has a content hash")
	}
	// Looked up at once, the same hashes as one at a time.
	many, err := e.db.Files().ReusableHashes(context.Background(), stamps)
	if err != nil {
		e.tb.Fatal(err)
	}
	for _, st := range stamps {
		if got, want := many[st], one[st]; (got == nil) != (want == nil) || got != nil && (got.Status != want.Status ||
			!bytes.Equal(got.Content, want.Content) || got.Prefix != want.Prefix) {
			e.tb.Errorf("%+v: looked up at once %+v, alone %+v", st, got, want)
		}
	}
}

// A set of files of one size and prefix, read side by side: copies, files
// that part in the middle (two ways at the same chunk) and near the end,
// and a hard link. Each ends with the hash of its own bytes, whichever
// algorithm the index uses, and the groups are the copies.
func TestSetsGiveEachFileItsOwnHash(t *testing.T) {
	for _, algo := range naming.HashAlgos {
		t.Run(algo, func(t *testing.T) {
			e := newEnv(t)
			if algo != naming.DefaultHash {
				e.db.Close()
				db, err := store.Open(context.Background(), store.Options{Path: filepath.Join(t.TempDir(), "index.db"), HashAlgo: algo})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				e.db = db
			}
			const size = 3 << 20
			base := big(3, size)
			late := edit(base, size-5000, 1) // past the first chunk, before the last 4 KiB
			tree(t, e.dir, map[string]string{
				"orig":      base,
				"c/one":     base,
				"c/two":     base,
				"c/three":   base,
				"link":      "=>c/one",
				"mid/a":     edit(base, size/2, 1),
				"mid/b":     edit(base, size/2, 2),
				"late/x":    late,
				"late/y":    late,
				"small/one": "tiny",
			})
			e.addRoot(store.RootSpec{})
			e.run()
			e.wantGroups([]string{"orig", "c/one", "c/two", "c/three", "link"}, []string{"late/x", "late/y"})
			e.wantTrueHashes(algo)
			// Every inode was read whole once, in one set.
			for _, p := range []string{"orig", "c/two", "c/three", "mid/a", "mid/b", "late/x", "late/y"} {
				if n := e.reads()["full "+p]; n != 1 {
					t.Errorf("%s read whole %d times, want once", p, n)
				}
			}
		})
	}
}

// A set larger than maxSetMembers is read as several, and its copies still
// make one group.
func TestLargeSetIsOneGroup(t *testing.T) {
	e := newEnv(t)
	content := big(9, 300<<10)
	files := map[string]string{}
	var want []string
	for i := range maxSetMembers + 5 {
		p := filepath.Join("copies", string(rune('a'+i)))
		files[p] = content
		want = append(want, p)
	}
	tree(t, e.dir, files)
	e.addRoot(store.RootSpec{})
	e.run()
	e.wantGroups(want)
	e.wantTrueHashes(naming.DefaultHash)
}

// A member of a set that changes after it was read side by side with its
// copies is not recorded with their hash; it is queued again and the next
// run settles it.
func TestSetMemberChangedWhileReadIsQueued(t *testing.T) {
	for _, mode := range []string{"early reads", "hash job"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "hash job" {
				noEarlyReads(t)
			}
			setMemberChanged(t)
		})
	}
}

// setMemberChanged changes a member of a set of three copies after another
// member's read, before its own check.
func setMemberChanged(t *testing.T) {
	e := newEnv(t)
	content := big(4, 2<<20)
	tree(t, e.dir, map[string]string{"a": content, "b": content, "c": content})
	e.addRoot(store.RootSpec{})
	ix := New(IndexOf(e.db), e.config())
	var once sync.Once
	var changed string
	ix.hook = func(stage, path string) {
		if stage == "hash" {
			waitEarly(t, ix)
		}
		if stage != "read" {
			return
		}
		once.Do(func() {
			// The first member checked: change another one before its
			// check.
			for _, n := range []string{"a", "b", "c"} {
				if p := filepath.Join(e.dir, n); p != path {
					changed = n
					f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
					if err != nil {
						t.Fatal(err)
					}
					f.Write([]byte("!"))
					f.Close()
					return
				}
			}
		})
	}
	e.runWith(ix)
	var rest []string
	for _, n := range []string{"a", "b", "c"} {
		if n != changed {
			rest = append(rest, n)
		}
	}
	e.wantGroups(rest)
	e.wantTrueHashes(naming.DefaultHash)
	e.run()
	e.settled()
	e.wantGroups(rest)
	e.matchesFresh()
}

// rehash, the way on when a hash state cannot be copied, hashes the start
// of a member's file.
func TestRehashHashesTheStart(t *testing.T) {
	e := newEnv(t)
	content := big(6, 3<<20)
	tree(t, e.dir, map[string]string{"f": content})
	f, err := openFile(filepath.Join(e.dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := &hashRun{ix: New(IndexOf(e.db), e.config()), algo: naming.DefaultHash}
	for _, off := range []int64{0, 5, readChunk, readChunk + 17, 3 << 20} {
		x, err := h.rehash(&setMember{f: f}, off)
		if err != nil {
			t.Fatal(err)
		}
		want := naming.NewHash(naming.DefaultHash)
		want.Write([]byte(content[:off]))
		if !bytes.Equal(x.Sum(nil), want.Sum(nil)) {
			t.Errorf("rehash to %d: wrong sum", off)
		}
	}
}
