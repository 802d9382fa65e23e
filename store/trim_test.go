package store

import (
	"context"
	"testing"
)

// Finished jobs of every queue go but the newest kept; jobs not finished
// stay, and so do running scans and each root's newest that succeeded.
func TestTrimJobs(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	a, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/a"}, false)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := db.Files().AddRoot(ctx, RootSpec{Path: "/b"}, false)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.w.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for i := 0; i < 20; i++ {
		status := []string{"completed", "failed", "cancelled"}[i%3]
		exec(`INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('hash', ?, 0, 0)`, status)
		exec(`INSERT INTO wal_maintenance_jobs (requested_mode, status, execute_after, created_at, updated_at)
			VALUES ('passive', ?, 0, 0, 0)`, []string{"completed", "failed"}[i%2])
		exec(`INSERT INTO purge_jobs (keep_ms, status, created_at, updated_at) VALUES (0, 'completed', 0, 0)`)
		exec(`INSERT INTO thumbnail_cleanup_jobs (content_id, status, execute_after, created_at, updated_at, host_id)
			VALUES (?, 'completed', 0, 0, 0, 1)`, i)
		// Root a: scans that succeeded, then failed ones after the last
		// success; root b: failed ones only.
		status = "succeeded"
		if i >= 10 {
			status = "failed"
		}
		exec(`INSERT INTO scans (root_id, status, started_at) VALUES (?, ?, 0)`, a.ID, status)
		exec(`INSERT INTO scans (root_id, status, started_at) VALUES (?, 'failed', 0)`, b.ID)
	}
	exec(`INSERT INTO jobs (kind, status, root_id, worker_id, lease_expires_at, created_at, updated_at)
		VALUES ('scan', 'running', ?, 'w', 1, 0, 0)`, a.ID)
	exec(`INSERT INTO jobs (kind, status, root_id, created_at, updated_at) VALUES ('scan', 'pending', ?, 0, 0)`, b.ID)
	exec(`INSERT INTO scans (root_id, status, started_at) VALUES (?, 'running', 0)`, b.ID)
	exec(`INSERT INTO scans (root_id, status, started_at) VALUES (?, 'failed', 0)`, b.ID)

	n, err := db.Maint().TrimJobs(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	count := func(q string) int64 {
		t.Helper()
		var n int64
		if err := db.w.QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	for q, want := range map[string]int64{
		"SELECT count(*) FROM jobs WHERE status IN ('completed', 'failed', 'cancelled')": 3,
		"SELECT count(*) FROM jobs WHERE status IN ('running', 'pending')":               2,
		"SELECT count(*) FROM jobs WHERE id > 17":                                        5, // the newest kept
		"SELECT count(*) FROM wal_maintenance_jobs":                                      3,
		"SELECT count(*) FROM purge_jobs":                                                3,
		"SELECT count(*) FROM thumbnail_cleanup_jobs":                                    3,
		// The 3 newest finished scans, b's running one and a's last
		// success.
		"SELECT count(*) FROM scans":                                            5,
		"SELECT count(*) FROM scans WHERE status = 'running'":                   1,
		"SELECT count(*) FROM scans WHERE status = 'succeeded' AND root_id = 1": 1,
		"SELECT max(id) FROM scans WHERE status = 'succeeded'":                  19,
	} {
		if got := count(q); got != want {
			t.Errorf("%s = %d, want %d", q, got, want)
		}
	}
	if n != (20-3)*4+(42-5) {
		t.Errorf("trimmed %d rows, want %d", n, (20-3)*4+(42-5))
	}
	// Nothing more goes the second time.
	if n, err := db.Maint().TrimJobs(ctx, 3); err != nil || n != 0 {
		t.Errorf("trimmed again: %d, %v", n, err)
	}
}
