package fusefs

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
)

// The numbers a view others may enter hands the kernel — node ids, inode
// numbers, directory offsets — are its row ids enciphered (idCipher): row
// ids count every group and file the index ever made, so plain ones would
// tell a user, from the groups they see, how many groups formed between
// two of theirs, and whether a file of theirs made a group with a file
// they cannot read (a group they see is numbered one past the last they
// saw, or two). Enciphered with a key the user cannot read (kept in the
// index), they stay the same number for the same row, mount after mount,
// and tell nothing of the others. The kernel and every user see only
// enciphered numbers: name_to_handle_at hands out node ids too. The fixed
// nodes keep theirs. A view for its owner alone hands out row ids as they
// are.

// idCipher is a keyed permutation of the 56 bits of a row id; nil: none.
type idCipher struct{ block cipher.Block }

// idBits is how many bits of a node id hold its row id.
const idBits = 56

// newIDCipher makes the permutation of key (16, 24 or 32 bytes; any other
// length: a random key, for this mount alone).
func newIDCipher(key []byte) *idCipher {
	switch len(key) {
	case 16, 24, 32:
	default:
		key = make([]byte, 16)
		if _, err := rand.Read(key); err != nil {
			panic("fusefs: no random key: " + err.Error()) // crypto/rand does not fail on Linux
		}
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		panic("fusefs: " + err.Error()) // the lengths are checked above
	}
	return &idCipher{block: b}
}

// permute enciphers (or, inverse, deciphers) x < 2^56: a Feistel network
// of four rounds over two 28-bit halves, each round's function one AES
// block of the round and the half.
func (c *idCipher) permute(x uint64, inverse bool) uint64 {
	const half, mask = idBits / 2, 1<<(idBits/2) - 1
	l, r := uint32(x>>half)&mask, uint32(x)&mask
	var in, out [aes.BlockSize]byte
	f := func(round int, v uint32) uint32 {
		in[0] = byte(round)
		binary.LittleEndian.PutUint32(in[1:], v)
		c.block.Encrypt(out[:], in[:])
		return binary.LittleEndian.Uint32(out[:]) & mask
	}
	if !inverse {
		for round := 0; round < 4; round++ {
			l, r = r, l^f(round, r)
		}
	} else {
		for round := 3; round >= 0; round-- {
			l, r = r^f(round, l), l
		}
	}
	return uint64(l)<<half | uint64(r)
}

// shown is the node id the kernel knows node by.
func (c *idCipher) shown(node uint64) uint64 {
	if c == nil || node>>idBits == 0 {
		return node // a fixed node
	}
	return node&^idMask | c.permute(node&idMask, false)
}

// real is the node a node id from the kernel names.
func (c *idCipher) real(node uint64) uint64 {
	if c == nil || node>>idBits == 0 {
		return node
	}
	return node&^idMask | c.permute(node&idMask, true)
}

// Directory offsets past "." and ".." (3 on: see offID) are enciphered as
// node ids are; one too large for it (a size of 2^56 bytes or more) is
// handed out as it is, above every enciphered one.
func (c *idCipher) shownOff(off uint64) uint64 {
	if c == nil || off < 3 || off-3 > idMask {
		return off
	}
	return c.permute(off-3, false) + 3
}

func (c *idCipher) realOff(off uint64) uint64 {
	if c == nil || off < 3 || off-3 > idMask {
		return off
	}
	return c.permute(off-3, true) + 3
}

// shownID is the number a row id (1 on) shows as in a name (name~<id>):
// 1 to 2^56, never 0, which no name holds.
func (c *idCipher) shownID(id int64) int64 {
	if c == nil || id <= 0 || id > idMask {
		return id
	}
	return int64(c.permute(uint64(id-1), false)) + 1
}

// realID is the row id a number in a name stands for; ok is false for
// one no row id shows as.
func (c *idCipher) realID(n int64) (int64, bool) {
	if c == nil {
		return n, n > 0
	}
	if n <= 0 || n > idMask+1 {
		return 0, false
	}
	id := int64(c.permute(uint64(n-1), true)) + 1
	return id, id <= idMask
}
