package folders

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
)

// countingSizes counts the reads of the rows of each size.
type countingSizes struct {
	indexer.Sizes
	reads map[int64]int
}

func (c *countingSizes) SizeRows(ctx context.Context, size int64) ([]store.HashRow, error) {
	c.reads[size]++
	return c.Sizes.SizeRows(ctx, size)
}

// CheckDir reads the indexed rows of a size once for all its files of that
// size (1000 files of one size read 1000 rows each: 3.6 ms a file), and
// answers as a check of each file alone.
func TestCheckDirReadsEachSizeOnce(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("f%02d", i)] = fmt.Sprintf("old %02d", i)
	}
	write(t, root, files)
	write(t, dir, map[string]string{"a": "old 03", "b": "new 01", "c": "new 02", "d": "old 07", "e": "a longer one"})
	db := index(t, root)
	ctx := context.Background()
	sizes := &countingSizes{Sizes: db.Files(), reads: map[int64]int{}}
	res, err := CheckDir(ctx, db.Folders(), sizes, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes.reads) != 2 || sizes.reads[6] != 1 || sizes.reads[12] != 1 {
		t.Errorf("rows read by size %v, want sizes 6 and 12 once each", sizes.reads)
	}
	want := []string{filepath.Join(dir, "b"), filepath.Join(dir, "c"), filepath.Join(dir, "e")}
	if fmt.Sprint(res.New) != fmt.Sprint(want) {
		t.Errorf("new %v, want %v", res.New, want)
	}
	for _, p := range []string{"a", "d"} {
		r, err := indexer.Check(ctx, db.Files(), filepath.Join(dir, p))
		if err != nil || len(r.Matches) != 1 {
			t.Errorf("check %s alone: %v (%v), want one copy", p, r.Matches, err)
		}
	}
}
