package store

import (
	"encoding/binary"
	"testing"
)

// The hashes of the duplicate contents are held in blocks: each is found
// at its place across the blocks' bounds, a hash between two is not, and
// hashes added out of order are sorted.
func TestSortedHashesAcrossBlocks(t *testing.T) {
	n := 2*hashBlockLen + 3
	var s sortedHashes
	for i := range n {
		var h [32]byte
		binary.BigEndian.PutUint64(h[:8], uint64(2*i+2)) // even: the odd ones between are missing
		if err := s.add(h[:]); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	if len(s.blocks) != 3 || s.n != n {
		t.Fatalf("%d blocks, %d hashes; want 3, %d", len(s.blocks), s.n, n)
	}
	for i := range n {
		var h [32]byte
		binary.BigEndian.PutUint64(h[:8], uint64(2*i+2))
		if j, ok := s.find(h[:]); !ok || j != i {
			t.Fatalf("hash %d found at %d, %v", i, j, ok)
		}
		binary.BigEndian.PutUint64(h[:8], uint64(2*i+1))
		if _, ok := s.find(h[:]); ok {
			t.Fatalf("a hash before %d found", i)
		}
	}
	var high [32]byte
	for i := range high {
		high[i] = 0xff
	}
	if _, ok := s.find(high[:]); ok {
		t.Fatal("a hash after the last found")
	}
	if err := s.add(high[:31]); err == nil {
		t.Fatal("a hash of 31 bytes was added")
	}
	s.sort()
	if j, ok := s.find(make([]byte, 32)); ok || j != 0 {
		t.Fatalf("a hash before the first found at %d, %v", j, ok)
	}

	// Out of order: the last first, then the rest.
	var u sortedHashes
	for i := range n {
		var h [32]byte
		binary.BigEndian.PutUint64(h[:8], uint64((i+n-1)%n))
		if err := u.add(h[:]); err != nil {
			t.Fatal(err)
		}
	}
	u.sort()
	for i := range n {
		var h [32]byte
		binary.BigEndian.PutUint64(h[:8], uint64(i))
		if j, ok := u.find(h[:]); !ok || j != i {
			t.Fatalf("unsorted: hash %d found at %d, %v", i, j, ok)
		}
	}
}
