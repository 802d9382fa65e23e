package store

import (
	"database/sql"
	"encoding/binary"
	"math/bits"
	"sync"

	"github.com/zeebo/blake3"

	"github.com/dupefs/dupefs/store/naming"
)

// Folder signatures. A folder's content is the
// multiset of the contents of the non-empty regular files of its whole
// subtree. Its signature is the sum, modulo 2^256, of a keyed hash of each
// content: order- and layout-independent, and additive, so a folder's
// signature is the sum of its own files' terms and of its subfolders'
// signatures, and a changed file moves every ancestor by one delta. (With
// --layout, the folders of one content are told apart by their relative
// paths when the report is made: a layout-aware sum kept for every folder
// cost a fifth of a first index's fold, for a report rarely asked.) Sums
// can be made to collide on purpose (Wagner), so a group is confirmed by
// comparing content lists before it is reported.

// summedFiles is the condition on files (alias p, with its dot, or "")
// that picks those a folder's content holds: present, and not empty.
func summedFiles(p string) string { return p + "missing = 0 AND " + p + "size > 0" }

// Sig is a 256-bit signature, as stored: 32 bytes, big-endian.
type Sig [4]uint64

// sigKey keys the term hashes, so they are not the plain hashes of anything.
var sigKey = [32]byte{'d', 'u', 'p', 'e', 'f', 's', ' ', 'f', 'o', 'l', 'd', 'e', 'r', ' ', 's', 'i', 'g', ' ', 'v', '1'}

// sigHashers are keyed hashers, reset between uses: keying one costs more
// than hashing a term.
var sigHashers = sync.Pool{New: func() any {
	h, _ := blake3.NewKeyed(sigKey[:])
	return h
}}

func sigOf(parts ...[]byte) Sig {
	h := sigHashers.Get().(*blake3.Hasher)
	defer sigHashers.Put(h)
	h.Reset()
	for _, p := range parts {
		var n [4]byte
		binary.LittleEndian.PutUint32(n[:], uint32(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var b [32]byte
	h.Digest().Read(b[:])
	return sigFromBytes(b[:])
}

// ContentTerm is the term of a content a file holds: its size and full
// hash.
func ContentTerm(algo string, size int64, hash []byte) Sig {
	var s [8]byte
	binary.LittleEndian.PutUint64(s[:], uint64(size))
	return sigOf([]byte("c"), []byte(algo), s[:], hash)
}

// UniqueTerm is the term of a file never hashed whole because no other
// inode of its host shares its size (or its size and prefix): a content no
// file of another inode holds, so it matches nothing but the links of its
// inode. Device and inode numbers name an inode on one host only, so the
// term holds its host (its row of hosts): two hosts' files of equal
// numbers are two contents. The first host's terms (row 1: an SQLite
// index's one host, and the host that took over a PostgreSQL index of
// before hosts) leave the host out, as every term did before hosts, so
// the sums such an index keeps stay right.
func UniqueTerm(host int64, dev, ino uint64) Sig {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], dev)
	binary.LittleEndian.PutUint64(b[8:], ino)
	if host == firstHost {
		return sigOf([]byte("u"), b[:])
	}
	var h [8]byte
	binary.LittleEndian.PutUint64(h[:], uint64(host))
	return sigOf([]byte("u"), b[:], h[:])
}

// firstHost is the row of hosts of an index's first host.
const firstHost = 1

// termCols are the columns of files (of alias, "" for none) a content
// term is made of, in the order of termRow.dest.
func termCols(alias string) string {
	if alias != "" {
		alias += "."
	}
	return alias + "size, " + alias + "hash_status, " + alias + "content_hash, " + alias + "dev, " + alias + "ino"
}

// termRow is what a content term is made of, as scanned from termCols,
// and the index's hash algorithm (algo, set by the reader). hash holds the
// row's bytes only until the next row is read.
type termRow struct {
	size, dev, ino int64
	status, algo   string
	hash           sql.RawBytes
}

// dest are the scan destinations of termCols.
func (r *termRow) dest() []any {
	return []any{&r.size, &r.status, &r.hash, &r.dev, &r.ino}
}

// term is the row's content term (fileTerm), the row being a file of
// host's.
func (r *termRow) term(host int64) (Sig, bool) {
	return fileTerm(r.status, r.algo, r.size, r.hash, host, uint64(r.dev), uint64(r.ino))
}

// fileTerm is the content term of a file of host's; known is false while
// its content is not settled (pending, failed).
func fileTerm(status, algo string, size int64, hash []byte, host int64, dev, ino uint64) (Sig, bool) {
	switch {
	case hash != nil:
		return ContentTerm(algo, size, hash), true
	case status == HashUnique || status == HashPartial:
		return UniqueTerm(host, dev, ino), true
	}
	return UniqueTerm(host, dev, ino), false
}

func (s Sig) Add(t Sig) Sig {
	var c uint64
	var r Sig
	for i := 3; i >= 0; i-- {
		r[i], c = bits.Add64(s[i], t[i], c)
	}
	return r
}

func (s Sig) Sub(t Sig) Sig {
	var b uint64
	var r Sig
	for i := 3; i >= 0; i-- {
		r[i], b = bits.Sub64(s[i], t[i], b)
	}
	return r
}

// Bytes is the signature as stored.
func (s Sig) Bytes() [32]byte {
	var b [32]byte
	for i := 0; i < 4; i++ {
		binary.BigEndian.PutUint64(b[8*i:], s[i])
	}
	return b
}

func sigFromBytes(b []byte) Sig {
	var s Sig
	if len(b) != naming.SumSize {
		return s
	}
	for i := 0; i < 4; i++ {
		s[i] = binary.BigEndian.Uint64(b[8*i:])
	}
	return s
}

// blob is the signature as a stored BLOB.
func (s Sig) blob() []byte {
	b := s.Bytes()
	return b[:]
}
