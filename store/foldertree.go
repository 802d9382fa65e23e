package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// FolderNode is a live folder with its subtree's sums, as the folder
// report reads them.
type FolderNode struct {
	ID, Parent int64
	Path       string
	Host       int64 // the host whose disk holds it (its row of hosts)
	Files      int64 // non-empty files in its subtree
	Bytes      int64
	Pending    int64 // of which the content is not settled yet
	Sig        Sig   // of its content, layout ignored
}

// FolderNodes calls fn for every live folder whose subtree holds a
// non-empty file, in no particular order.
func (fo *Folders) FolderNodes(ctx context.Context, fn func(FolderNode) error) error {
	rows, err := fo.db.query(ctx, `SELECT id, coalesce(parent_id, 0), path, host_id, tree_files, tree_bytes, tree_pending, tree_sig
		FROM folders NOT INDEXED WHERE tree_files > 0 AND missing = 0`)
	if err != nil {
		return classify("read folders", err)
	}
	defer rows.Close()
	for rows.Next() {
		var n FolderNode
		var sig []byte
		if err := rows.Scan(&n.ID, &n.Parent, &n.Path, &n.Host, &n.Files, &n.Bytes, &n.Pending, &sig); err != nil {
			return classify("read folders", err)
		}
		n.Sig = sigFromBytes(sig)
		if err := fn(n); err != nil {
			return err
		}
	}
	return classify("read folders", rows.Err())
}

// SharedFile is a live non-empty file whose content another file may hold:
// Content numbers the contents met in one call of SharedFiles from 0 up,
// the duplicate contents first (in the order of their hashes), then each
// content of one inode of several links as it is met.
type SharedFile struct {
	Folder  int64
	Content int64
}

// SharedFiles calls fn for every live file of a duplicate content, and for
// every file of an inode linked more than once: the only files two folders
// can share. hostOf says the host of a folder (its row of hosts; false
// for a folder fn is not to see): an inode is its device and inode
// numbers on one host. The duplicate contents' hashes are read first,
// then the files in one pass over the table (NOT INDEXED: a lookup of
// each content's files cost five times as much, 1.3 s against 0.25 s for
// 72k of 216k files). The pass keeps only the files of those contents
// and of inodes of several links: each row handed over costs more than
// SQLite's test of it (/usr: 14k rows of 101k hashed, 115 -> 50 ms). A
// file's content is found by a binary search of the sorted hashes: for a
// million small files, 90k duplicate contents held in a map by their
// hashes were a third of the overlap search's memory. That search is
// also what decides: SQLite's test compares only the first 8 bytes of
// each hash, whose set fits its cache where the whole hashes' set was
// written to a temporary file (1M small files: 2.6 -> 1.6 s, 1 MB less
// of SQLite's memory); a file whose hash only begins as a duplicate
// content's is left out here.
func (fo *Folders) SharedFiles(ctx context.Context, hostOf func(folder int64) (int64, bool), fn func(SharedFile) error) error {
	// A file's content is its hash in the index's one algorithm: the
	// groups are looked up by hash alone (no key built for each file).
	algo := fo.db.hashAlgo
	// In the order of the hashes: the index on (hash_algo, content_hash)
	// gives them so, with no sort.
	rows, err := fo.db.query(ctx, `SELECT content_hash FROM contents WHERE hash_algo = ? AND `+isGroup+` ORDER BY content_hash`, algo)
	if err != nil {
		return classify("read duplicate contents", err)
	}
	var groups sortedHashes
	var hash sql.RawBytes // outside the loop: one escaping to the heap per row was 2 MB of garbage
	for rows.Next() {
		if err := rows.Scan(&hash); err != nil {
			rows.Close()
			return classify("read duplicate contents", err)
		}
		if err := groups.add(hash); err != nil {
			rows.Close()
			return fmt.Errorf("read duplicate contents: %w", err)
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return classify("read duplicate contents", err)
	}
	groups.sort()
	// Three columns, the device and inode in one text for a file of
	// several links alone: each column handed over costs (1M small files,
	// five columns: 1.5 s; three: 1.1 s).
	rows, err = fo.db.query(ctx, `SELECT folder_id, content_hash, CASE WHEN nlink > 1 THEN dev || ' ' || ino END
		FROM files NOT INDEXED WHERE `+summedFiles("")+` AND (nlink > 1 OR substr(content_hash, 1, 8) IN
			(SELECT substr(content_hash, 1, 8) FROM contents WHERE hash_algo = ? AND `+isGroup+`))`, algo)
	if err != nil {
		return classify("read duplicate files", err)
	}
	defer rows.Close()
	// Inodes of several links whose content no other inode holds: their
	// files share it. Numbered after the groups, one number per inode.
	inodes := map[[24]byte]int64{}
	var inode sql.RawBytes
	var s SharedFile
	for rows.Next() {
		if err := rows.Scan(&s.Folder, &hash, &inode); err != nil {
			return classify("read duplicate files", err)
		}
		host, ok := hostOf(s.Folder)
		if !ok {
			continue
		}
		i, ok := groups.find(hash)
		switch {
		case ok:
			s.Content = int64(i)
		case inode != nil:
			var dev, ino int64
			if !parseInts(inode, &dev, &ino) {
				return fmt.Errorf("read duplicate files: a file's device and inode: %q", inode)
			}
			var k [24]byte
			binary.LittleEndian.PutUint64(k[:8], uint64(dev))
			binary.LittleEndian.PutUint64(k[8:16], uint64(ino))
			binary.LittleEndian.PutUint64(k[16:], uint64(host))
			n, ok := inodes[k]
			if !ok {
				n = int64(groups.n + len(inodes))
				inodes[k] = n
			}
			s.Content = n
		default:
			continue
		}
		if err := fn(s); err != nil {
			return err
		}
	}
	return classify("read duplicate files", rows.Err())
}

// FolderNodeByPath returns the sums of a live folder of this host, or
// ErrNotFound.
func (fo *Folders) FolderNodeByPath(ctx context.Context, path string) (FolderNode, error) {
	var n FolderNode
	var sig []byte
	err := fo.db.queryRow(ctx, `SELECT id, coalesce(parent_id, 0), path, host_id, tree_files, tree_bytes, tree_pending, tree_sig
		FROM folders WHERE host_id = ? AND path = ? AND missing = 0`, fo.db.host.ID, path).Scan(&n.ID, &n.Parent, &n.Path, &n.Host, &n.Files, &n.Bytes, &n.Pending, &sig)
	if errors.Is(err, sql.ErrNoRows) {
		return n, ErrNotFound
	}
	n.Sig = sigFromBytes(sig)
	return n, classify("read folder", err)
}

// sortedHashes holds hashes of 32 bytes in ascending order, in blocks that
// are never copied: in one slice grown by doubling, the 87k duplicate
// contents of 1M small files (2.8 MB) left as much again to the collector
// as the overlap search read its files, the peak of a first index's
// memory. They are added in order (the index on (hash_algo,
// content_hash) gives them so); an index whose hashes are not all BLOBs
// (SQLite orders TEXT before them) gets them sorted once all are read.
type sortedHashes struct {
	blocks   [][][32]byte
	n        int
	unsorted bool
}

const hashBlockLen = 4096 // 128 KiB

// add appends h.
func (s *sortedHashes) add(h []byte) error {
	if len(h) != 32 {
		return fmt.Errorf("a hash of %d bytes", len(h))
	}
	if s.n > 0 && bytes.Compare(s.at(s.n - 1)[:], h) > 0 {
		s.unsorted = true
	}
	if s.n%hashBlockLen == 0 {
		s.blocks = append(s.blocks, make([][32]byte, 0, hashBlockLen))
	}
	last := &s.blocks[len(s.blocks)-1]
	*last = append(*last, [32]byte(h))
	s.n++
	return nil
}

// sort puts the hashes in order if they were not added so.
func (s *sortedHashes) sort() {
	if !s.unsorted {
		return
	}
	all := make([][32]byte, 0, s.n)
	for _, b := range s.blocks {
		all = append(all, b...)
	}
	slices.SortFunc(all, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	s.blocks = s.blocks[:0]
	for len(all) > 0 {
		n := min(len(all), hashBlockLen)
		s.blocks = append(s.blocks, all[:n:n])
		all = all[n:]
	}
	s.unsorted = false
}

func (s *sortedHashes) at(i int) *[32]byte { return &s.blocks[i/hashBlockLen][i%hashBlockLen] }

// find returns the position of h, and whether it is there.
func (s *sortedHashes) find(h []byte) (int, bool) {
	i := sort.Search(s.n, func(i int) bool { return bytes.Compare(s.at(i)[:], h) >= 0 })
	return i, i < s.n && bytes.Equal(s.at(i)[:], h)
}
