package store

import (
	"context"
	"fmt"
	"testing"
)

// The digests of many folders read a batch at a time are each folder's
// read alone: nested folders, a folder whose name continues another's
// ("/r/d1-x" after "/r/d1"), the root, a folder whose content is not
// settled, and batches that end anywhere.
func TestContentDigestsAsOneByOne(t *testing.T) {
	defer func(b int64) { confirmBudget = b }(confirmBudget)
	ctx := context.Background()
	db := openTest(t)
	r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
	if err != nil {
		t.Fatal(err)
	}
	var files []fakeFile
	for i := range 30 {
		dir := fmt.Sprintf("/r/d%d/s%d", i%4, i%3)
		switch i % 5 {
		case 0:
			dir = fmt.Sprintf("/r/d%d", i%4)
		case 1:
			dir = fmt.Sprintf("/r/d%d-x", i%4)
		}
		content := i % 7
		if i == 17 {
			content = -1 // hashed in part: a unique content
		}
		files = append(files, fakeFile{dir, fmt.Sprintf("f%d", i), content})
	}
	addFakeFiles(t, db, r.ID, files)
	// Not hashed yet: /r/d2/s1 and the folders above it are not known.
	addFiles(t, db, r.ID, "/r/d2/s1/new", FileStat{Name: "pending", Size: 5, MtimeNS: 1, Dev: 1, Ino: 1 << 41, Nlink: 1})
	rows, err := db.r.Query("SELECT id, path, host_id FROM folders ORDER BY path")
	if err != nil {
		t.Fatal(err)
	}
	var fs []FolderRef
	for rows.Next() {
		var f FolderRef
		if err := rows.Scan(&f.ID, &f.Path, &f.Host); err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	rows.Close()
	weight := make([]int64, len(fs))
	for i := range weight {
		weight[i] = int64(1 + i%4)
	}
	unknown := 0
	for _, budget := range []int64{1, 3, 7, 1 << 20} {
		confirmBudget = budget
		got, err := db.contentDigests(ctx, fs, weight)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			// Alone: its subtree's files as the report lists them.
			files, known, err := db.subtreeContents(ctx, f.Host, f.Path)
			if err != nil {
				t.Fatal(err)
			}
			terms := make([][32]byte, len(files))
			for i := range files {
				terms[i] = files[i].Term.Bytes()
			}
			d := digestOf(terms)
			if g, ok := got[f.ID]; !ok || g.d != d || g.known != known {
				t.Errorf("budget %d, %s: batched %x known %v (read: %v), alone %x known %v", budget, f.Path, g.d, g.known, ok, d, known)
			}
			if !known && budget == 1 {
				unknown++
			}
		}
	}
	if unknown == 0 || len(fs) < 10 {
		t.Fatalf("the fixture has %d folders, %d of unknown content: want several, and some unknown", len(fs), unknown)
	}
}
