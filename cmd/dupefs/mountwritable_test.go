package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A mount that only serves its index serves it read-only (no thumbnails
// made) when this user cannot write the index file; a PostgreSQL URL is
// no file, and was always taken for one this user cannot write.
func TestServedIndexWritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "index.db")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want bool
	}{
		{file, true},
		{filepath.Join(dir, "missing", "index.db"), false},
		{"postgres://dupefs@nas/dupefs", true},
		{"postgresql:///dupefs?host=/run/postgresql", true},
	} {
		if got := indexWritable(c.path); got != c.want {
			t.Errorf("indexWritable(%s) = %v, want %v", c.path, got, c.want)
		}
	}
}
