package store

import (
	"context"
	"fmt"
	"testing"
)

// Every queue's jobs are listed, newest first, their leases with them,
// paged without a job twice or skipped though ids repeat across queues
// and many share a created_at.
func TestAllJobsPage(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	// ?1 status, ?2 worker, ?3 lease, ?4 created_at, ?5 a distinct number.
	inserts := map[string]string{
		KindScan: `INSERT INTO jobs (kind, status, worker_id, lease_expires_at, created_at, updated_at)
			VALUES ('scan', ?1, ?2, ?3, ?4, 0)`,
		KindCheckpoint: `INSERT INTO wal_maintenance_jobs (requested_mode, status, worker_id, lease_expires_at,
			execute_after, created_at, updated_at) VALUES ('passive', ?1, ?2, ?3, 0, ?4, 0)`,
		KindPurge: `INSERT INTO purge_jobs (keep_ms, status, worker_id, lease_expires_at, created_at, updated_at)
			VALUES (0, ?1, ?2, ?3, ?4, 0)`,
		KindThumbnailCleanup: `INSERT INTO thumbnail_cleanup_jobs (content_id, status, worker_id, lease_expires_at,
			execute_after, created_at, updated_at, host_id) VALUES (?5, ?1, ?2, ?3, 0, ?4, 0, 1)`,
	}
	const perQueue = 7
	for kind, q := range inserts {
		for i := 0; i < perQueue; i++ {
			// The first of each queue runs under a lease, the others are
			// done; created_at repeats within and across queues.
			status, worker, lease := "completed", any(nil), any(nil)
			if i == 0 {
				status, worker, lease = "running", "w-"+kind, int64(5_000_000)
			}
			if _, err := db.w.ExecContext(ctx, q, status, worker, lease, 1000+i/3, 100+i); err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
		}
	}
	seen := map[string]bool{}
	leased := map[string]bool{}
	var after *JobCursor
	var prev *Job
	for page := 0; ; page++ {
		js, err := db.Jobs().AllJobsPage(ctx, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		for i := range js {
			j := js[i]
			key := fmt.Sprint(j.Kind, j.ID)
			if seen[key] {
				t.Fatalf("%s %d on two pages", j.Kind, j.ID)
			}
			seen[key] = true
			if prev != nil && j.CreatedAt.After(prev.CreatedAt) {
				t.Fatalf("%s %d (created %v) after %s %d (created %v)", j.Kind, j.ID, j.CreatedAt, prev.Kind, prev.ID, prev.CreatedAt)
			}
			if j.Status == StatusRunning {
				if j.WorkerID != "w-"+j.Kind || j.LeaseExpiresAt.UnixMilli() != 5_000_000 {
					t.Errorf("%s %d: worker %q, lease %v", j.Kind, j.ID, j.WorkerID, j.LeaseExpiresAt)
				}
				leased[j.Kind] = true
			}
			prev = &j
		}
		if len(js) < 3 {
			break
		}
		last := js[len(js)-1]
		after = &JobCursor{CreatedAt: last.CreatedAt, Kind: last.Kind, ID: last.ID}
	}
	if len(seen) != perQueue*len(inserts) {
		t.Errorf("paged through %d jobs, want %d", len(seen), perQueue*len(inserts))
	}
	for kind := range inserts {
		if !leased[kind] {
			t.Errorf("no running %s job with its lease listed", kind)
		}
	}
}
