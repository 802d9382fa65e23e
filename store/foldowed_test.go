package store

import (
	"context"
	"testing"
)

// A fold commits the folders' sums before the folder groups are stored,
// in a write of their own; a process killed between the two left groups
// that no later fold stored again (nothing waited to be folded): a first
// index of 11,000 folders killed at random reported no exact folder
// group in 2 runs of 10. The next UpdateFolderSigs stores the groups a fold
// still owes, after a bulk fold and after a fold chunk alike.
func TestFolderGroupsOwedByAKilledFold(t *testing.T) {
	ctx := context.Background()
	twins := func(dir string, c0, c1 int) []fakeFile {
		return []fakeFile{{dir, "a", c0}, {dir, "b", c1}}
	}
	for _, bulk := range []bool{true, false} {
		db := openTest(t)
		r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
		if err != nil {
			t.Fatal(err)
		}
		var fs []fakeFile
		fs = append(fs, twins("/r/x/one", 1, 2)...)
		fs = append(fs, twins("/r/y/one", 1, 2)...)
		fs = append(fs, twins("/r/x/two", 3, 4)...)
		writeFoldTree(t, db, r.ID, fs)
		if !bulk {
			// Groups stored, then a copy more waits to be folded in.
			if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
				t.Fatal(err)
			}
			writeFoldTree(t, db, r.ID, twins("/r/y/two", 3, 4))
		}
		// The fold's write, and then the process is killed.
		err = db.Write(ctx, func(tx *Tx) (err error) {
			if bulk {
				_, err = tx.foldAll(db.r)
			} else {
				_, err = tx.foldFolders()
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := db.Folders().FoldersPending(ctx); err != nil || n != 0 {
			t.Fatalf("bulk %v: %d folders wait (%v)", bulk, n, err)
		}
		// The next run.
		if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
			t.Fatal(err)
		}
		if bad, err := db.Folders().VerifyFolderSigs(ctx); err != nil || len(bad) > 0 {
			t.Fatalf("bulk %v: %v %q", bulk, err, bad)
		}
		groups, err := db.Folders().FolderGroups(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(groups) == 0 {
			t.Fatalf("bulk %v: no folder group stored", bulk)
		}
	}
}
