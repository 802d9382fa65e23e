package naming

import (
	"bytes"
	"testing"
)

func TestCloneHashGoesOnFromTheSameState(t *testing.T) {
	for _, algo := range HashAlgos {
		sum := func(parts ...string) []byte {
			h := NewHash(algo)
			for _, p := range parts {
				h.Write([]byte(p))
			}
			return h.Sum(nil)
		}
		h := GetHash(algo)
		h.Write([]byte("common start "))
		c, err := CloneHash(h)
		if err != nil {
			t.Fatalf("%s: %v", algo, err)
		}
		h.Write([]byte("one way"))
		c.Write([]byte("another"))
		if got := h.Sum(nil); !bytes.Equal(got, sum("common start ", "one way")) {
			t.Errorf("%s: the original's sum changed with its copy", algo)
		}
		if got := c.Sum(nil); !bytes.Equal(got, sum("common start ", "another")) {
			t.Errorf("%s: the copy's sum is not that of its bytes", algo)
		}
		PutHash(algo, h)
		PutHash(algo, c)
	}
}
