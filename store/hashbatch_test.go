package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
)

// A batch of hash results written staged (PostgreSQL: one COPY, a
// statement per kind) leaves the index as the same results written one by
// one: every kind, results the file's change since voids, a file with two
// results in one batch, and the groups the contents make.
func TestHashBatchStagedAsOneByOne(t *testing.T) {
	defer func(n int) { pgHashBatchMin = n }(pgHashBatchMin)
	ctx := context.Background()
	var got [2][]string
	for k, least := range []int{1, 1 << 30} {
		pgHashBatchMin = least
		db := openTest(t)
		r, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/r"}, false)
		if err != nil {
			t.Fatal(err)
		}
		var files []FileStat
		for i := range 48 {
			files = append(files, FileStat{Name: fmt.Sprintf("f%02d", i), Size: int64(100 + i%3), MtimeNS: 1, Dev: 1, Ino: uint64(i + 1)})
		}
		dir := addFiles(t, db, r.ID, "/r", files...)
		rows := make([]HashRow, len(files))
		for i, f := range files {
			rows[i] = HashRow{ID: fileID(t, db, dir, f.Name), Size: f.Size, MtimeNS: f.MtimeNS, Dev: f.Dev, Ino: f.Ino}
		}
		dump := func(step string) {
			t.Helper()
			q, err := db.r.Query(`SELECT f.name, f.hash_status, coalesce(f.prefix_hash, -1), coalesce(f.content_hash, x''), coalesce(f.error, ''),
				f.read_failures, f.retry_after IS NOT NULL FROM files f ORDER BY f.name`)
			if err != nil {
				t.Fatal(err)
			}
			for q.Next() {
				var name, st, msg string
				var prefix, fails int64
				var content []byte
				var retry bool
				if err := q.Scan(&name, &st, &prefix, &content, &msg, &fails, &retry); err != nil {
					t.Fatal(err)
				}
				got[k] = append(got[k], fmt.Sprintf("%s: %s %s %d %x %q %d %v", step, name, st, prefix, content, msg, fails, retry))
			}
			q.Close()
			tot, err := db.Totals(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got[k] = append(got[k], fmt.Sprintf("%s: groups %d of %d files", step, tot.Groups, tot.GroupFiles))
			if tot.Groups == 0 {
				t.Fatalf("no group after the %s:\n%q", step, got[k])
			}
		}
		batch := func(fn func(b *HashBatch) error) {
			t.Helper()
			err := db.Write(ctx, func(tx *Tx) error {
				b, err := tx.HashBatch(db.HashAlgo())
				if err != nil {
					return err
				}
				if err := fn(b); err != nil {
					return err
				}
				return b.Close()
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		// Every kind, on files as planned, and on files changed since
		// (another mtime): those stay as they were.
		batch(func(b *HashBatch) error {
			for i := range 40 {
				row := rows[i]
				if i%9 == 8 {
					row.MtimeNS = 2
				}
				var err error
				switch i % 4 {
				case 0:
					err = b.Prefix(&row, int64(i))
				case 1:
					err = b.Content(&row, sql.NullInt64{Int64: int64(i), Valid: i%8 == 1}, sum(byte(i%3)))
				case 2:
					err = b.Fail(&row, fmt.Sprintf("unreadable\n%d", i))
				case 3:
					err = b.Requeue(&row, "changed while read")
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		dump("first batch")
		// The files hashed in part read whole; a file with two results
		// in one batch (its prefix, then its content); a failed file is
		// no file to record a hash of.
		batch(func(b *HashBatch) error {
			for i := 0; i < 40; i += 4 {
				if err := b.Content(&rows[i], sql.NullInt64{}, sum(byte(i%5))); err != nil {
					return err
				}
			}
			if err := b.Prefix(&rows[44], 44); err != nil {
				return err
			}
			if err := b.Content(&rows[44], sql.NullInt64{}, sum(1)); err != nil {
				return err
			}
			return b.Content(&rows[2], sql.NullInt64{}, sum(2))
		})
		dump("second batch")
	}
	if !slices.Equal(got[0], got[1]) {
		for i := range max(len(got[0]), len(got[1])) {
			a, b := "", ""
			if i < len(got[0]) {
				a = got[0][i]
			}
			if i < len(got[1]) {
				b = got[1][i]
			}
			if a != b {
				t.Errorf("staged %q\none by one %q", a, b)
			}
		}
	}
}
