package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
	"sync"

	"github.com/zeebo/blake3"
)

// Hash algorithms, group keys, thumbnail file names, and what it means for a
// path to lie under a folder.

// Hash algorithms, as stored in settings and files.hash_algo and written
// before the ':' of a group key.
const (
	HashSHA256 = "sha256"
	HashBLAKE3 = "blake3"
	// DefaultHash is the algorithm of a new index when none is asked for.
	DefaultHash = HashSHA256
)

// HashAlgos lists the algorithms an index may use, the default first.
var HashAlgos = []string{HashSHA256, HashBLAKE3}

// ValidHashAlgo reports whether algo names an algorithm an index may use.
func ValidHashAlgo(algo string) bool { return algo == HashSHA256 || algo == HashBLAKE3 }

// SumSize is the length of a content hash of either algorithm; the index
// refuses sums of any other length.
const SumSize = 32

// NewHash returns a hash of the algorithm (sha256 for any name but blake3).
func NewHash(algo string) hash.Hash {
	if algo == HashBLAKE3 {
		return blake3.New()
	}
	return sha256.New()
}

// hashPools keep hashers between files: a BLAKE3 hasher is 8 KiB or so,
// and making one per file of a tree of small files cost more than hashing
// them.
var hashPools = map[string]*sync.Pool{
	HashSHA256: {New: func() any { return sha256.New() }},
	HashBLAKE3: {New: func() any { return blake3.New() }},
}

// GetHash returns a reset hasher of algo from a pool; PutHash gives it back.
func GetHash(algo string) hash.Hash {
	p, ok := hashPools[algo]
	if !ok {
		return NewHash(algo)
	}
	h := p.Get().(hash.Hash)
	h.Reset()
	return h
}

// PutHash returns a hasher GetHash gave.
func PutHash(algo string, h hash.Hash) {
	if p, ok := hashPools[algo]; ok {
		p.Put(h)
	}
}

// CloneHash returns an independent copy of a hasher's state (one of
// NewHash's or GetHash's): files that agree up to a point are hashed that
// far once, then each goes on from its own copy.
func CloneHash(h hash.Hash) (hash.Hash, error) {
	switch c := h.(type) {
	case *blake3.Hasher:
		return c.Clone(), nil
	case hash.Cloner:
		x, err := c.Clone()
		if err != nil {
			return nil, fmt.Errorf("copy hash state: %w", err)
		}
		return x, nil
	}
	return nil, fmt.Errorf("copy hash state of %T: %w", h, errors.ErrUnsupported)
}

// GroupKey is a content's name: <algo>:<64 lowercase hex>, the algorithm
// of the index and the digest of the content (or, for a folder group, its
// signature).
func GroupKey(algo string, sum []byte) string { return algo + ":" + hex.EncodeToString(sum) }

// ParseKey splits "<algo>:<hex>" into its algorithm and digest, checking the
// digest length of the algorithm.
func ParseKey(key string) (algo string, sum []byte, err error) {
	algo, h, ok := strings.Cut(key, ":")
	if !ok || !ValidHashAlgo(algo) || len(h) != 64 || strings.ToLower(h) != h {
		return "", nil, fmt.Errorf("group key %q: want sha256:<64 lowercase hex> or blake3:<64 lowercase hex>", key)
	}
	sum, err = hex.DecodeString(h)
	if err != nil {
		return "", nil, fmt.Errorf("group key %q: %w", key, err)
	}
	return algo, sum, nil
}

// thumbExt is the extension of a thumbnail file.
const thumbExt = ".jpg"

// ThumbFileName is the name of a group's thumbnail, in the cache and in the
// mount's /thumbs. It refuses keys that are not group keys, so no name can
// lead out of the cache directory.
func ThumbFileName(key string) (string, error) {
	if _, _, err := ParseKey(key); err != nil {
		return "", err
	}
	return key + thumbExt, nil
}

// ThumbKeyOf is the group key a thumbnail file name stands for; ok is false
// for a name that is no thumbnail's.
func ThumbKeyOf(name string) (key string, ok bool) {
	key, ok = strings.CutSuffix(name, thumbExt)
	if !ok {
		return "", false
	}
	if _, _, err := ParseKey(key); err != nil {
		return "", false
	}
	return key, true
}

// Within reports whether path p is dir or lies below it. Both are clean
// (no trailing slash but on "/" itself, no "//", "." or ".."), and both
// absolute or both relative to one folder. A path below dir continues dir
// with a '/': "/a" does not hold "/ab", and "/" holds every absolute path.
func Within(dir, p string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// Below reports whether path p lies strictly below dir.
func Below(dir, p string) bool { return p != dir && Within(dir, p) }

// JoinPath joins a folder path and a name.
func JoinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// HostPath is how a report names a copy on another host: HOST:/abs/path,
// as scp writes it. A copy on the reporting host is its path alone.
func HostPath(host, path string) string { return host + ":" + path }

// SplitHostPath undoes HostPath: ok is false for a path that names no
// host (an absolute path, or one whose part before ":/" is empty or holds
// a '/').
func SplitHostPath(p string) (host, path string, ok bool) {
	i := strings.Index(p, ":/")
	if i <= 0 || strings.ContainsRune(p[:i], '/') {
		return "", p, false
	}
	return p[:i], p[i+1:], true
}
