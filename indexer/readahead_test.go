package indexer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/store/naming"
)

// diskDir is a temporary folder on a file system whose pages can be
// dropped from the page cache: the test's temporary folder unless that is
// in memory (tmpfs, ramfs), else one beside the package.
func diskDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if typ := uint32(st.Type); typ != unix.TMPFS_MAGIC && typ != unix.RAMFS_MAGIC {
		return dir
	}
	dir, err := os.MkdirTemp(".", ".probe-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// uncache writes content to a new file, syncs it and drops its pages from
// the page cache from off on, then opens it for a probing read.
func uncache(t *testing.T, content []byte, off int64) *rawFile {
	t.Helper()
	p := filepath.Join(diskDir(t), "f")
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	fh, err := openFile(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fh.Close() })
	if err := unix.Fsync(fh.fd); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(fh.fd, off, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	fh.probe = true
	return fh
}

// A first read with RWF_NOWAIT takes what the page cache holds and says
// when the data is not there; the file's bytes come out the same either
// way, whole or in part cached.
func TestProbingReadTellsCachedData(t *testing.T) {
	content := []byte(big(2, 256<<10))
	for _, c := range []struct {
		name     string
		uncached int64 // pages dropped from here on
		cold     bool
	}{
		{"cached", int64(len(content)), false},
		{"not cached", 0, true},
		{"first pages cached", 64 << 10, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, how := range []string{"read", "readAt"} {
				fh := uncache(t, content, c.uncached)
				got := make([]byte, len(content))
				var err error
				if how == "read" {
					sum, e := contentHash(context.Background(), fh, int64(len(content)), naming.HashSHA256, got, nil)
					want := naming.NewHash(naming.HashSHA256)
					want.Write(content)
					if e == nil && !bytes.Equal(sum, want.Sum(nil)) {
						t.Errorf("%s: wrong hash", how)
					}
					err = e
				} else {
					_, err = fh.ReadAt(got, 0)
					if err == nil && !bytes.Equal(got, content) {
						t.Errorf("%s: wrong bytes", how)
					}
				}
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				if noWaitBroken.Load() {
					t.Fatal("RWF_NOWAIT refused on this machine's file system")
				}
				if fh.cold != c.cold {
					t.Errorf("%s: cold %v, want %v", how, fh.cold, c.cold)
				}
			}
		})
	}
}

// Reads ahead start on with a probe now and then, go off after probeWarm
// probes found their data cached, and on at the first that did not.
func TestAheadGateFollowsThePageCache(t *testing.T) {
	var g aheadGate
	count := func(n int) (advised int) {
		for range n {
			if g.advise() {
				advised++
			}
		}
		return advised
	}
	if got := count(probeEvery * 4); got != probeEvery*4-4 {
		t.Fatalf("on: %d of %d candidates read ahead, want all but %d probes", got, probeEvery*4, 4)
	}
	for range probeWarm - 1 {
		g.saw(false)
	}
	if g.off.Load() {
		t.Fatal("off before probeWarm warm probes")
	}
	g.saw(false)
	if got := count(100); got != 0 {
		t.Fatalf("off: %d candidates read ahead", got)
	}
	g.saw(true)
	if got := count(probeEvery); got != probeEvery-1 {
		t.Fatalf("on again: %d of %d read ahead", got, probeEvery)
	}
	// A cold probe among warm ones starts the count again.
	for range probeWarm - 1 {
		g.saw(false)
	}
	g.saw(true)
	g.saw(false)
	if g.off.Load() {
		t.Fatal("a cold probe did not start the count of warm ones again")
	}
}
