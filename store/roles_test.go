package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// An index an older dupefs left with actions under way is upgraded so
// that no run works another's plan: what was planned or claimed is
// abandoned; what was prepared, and what done actions depend on, holds
// its roles; a plan with nothing left under way is done.
func TestMigrationGivesTheLedgerRoles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "index.db")
	olderIndex(t, path)
	w, err := sql.Open("sqlite", "file:"+escapePath(path))
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.ExecContext(ctx, `
		INSERT INTO plans (id, op, created_at) VALUES (1, 'trash', 1), (2, 'symlink', 1);
		INSERT INTO actions (plan_id, idem_key, op, state, hash_algo, content_hash, size, copy_file_id, copy_path,
			copy_dev, copy_ino, copy_mtime_ns, keep_file_id, keep_path, keep_dev, keep_ino, keep_mtime_ns,
			worker_id, lease_expires_at, created_at, updated_at) VALUES
		(1, printf('%064d', 1), 'trash', 'planned', 'sha256', x'00', 1, 1, '/p/b', 1, 2, 1, 1, '/p/a', 1, 1, 1, NULL, NULL, 1, 1),
		(1, printf('%064d', 2), 'trash', 'leased', 'sha256', x'00', 1, 1, '/p/c', 1, 3, 1, 1, '/p/a', 1, 1, 1, 'w', 5, 1, 1),
		(1, printf('%064d', 3), 'trash', 'prepared', 'sha256', x'00', 1, 1, '/p/d', 1, 4, 1, 1, '/p/a', 1, 1, 1, 'w', 5, 1, 1),
		(2, printf('%064d', 4), 'symlink', 'done', 'sha256', x'00', 1, 1, '/p/e', 1, 5, 1, 1, '/p/f', 1, 6, 1, NULL, NULL, 1, 1),
		(2, printf('%064d', 5), 'symlink', 'planned', 'sha256', x'00', 1, 1, '/p/g', 1, 7, 1, 1, '/p/f', 1, 6, 1, NULL, NULL, 1, 1);`)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	as, _ := db.Ledger().Actions(ctx, ActionQuery{})
	var states []string
	for _, a := range as {
		states = append(states, a.State)
	}
	if got := strings.Join(states, " "); got != "abandoned abandoned prepared done abandoned" {
		t.Errorf("states after the upgrade: %s", got)
	}
	got := roles(t, db)
	if len(got) != 3 || got["/p/a"] != RoleKeep || got["/p/d"] != RoleCopy || got["/p/f"] != RoleKeep {
		t.Errorf("roles after the upgrade: %v", got)
	}
	ps, _ := db.Ledger().Plans(ctx, 0, 0)
	if ps[0].ID != 2 || ps[0].State != "done" || ps[1].State != "open" {
		t.Errorf("plans after the upgrade: %+v", ps)
	}
}
