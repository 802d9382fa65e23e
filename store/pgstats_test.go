package store

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A statement run behind (a full ANALYZE of a large index on a slow disk)
// is let go of once the context the store was opened with ends (Ctrl-C,
// SIGTERM): Close waited for it up to behindTimeout, and the signals
// that followed were taken by the same handler.
func TestInterruptedCloseWaitsForNothingBehind(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: SQLite runs nothing behind")
	}
	path := reopenPath(openTest(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	const slow = "SELECT pg_sleep(20)"
	if err := db.Write(ctx, func(tx *Tx) error {
		tx.after = append(tx.after, slow)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := db.r.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE query = ? AND state = 'active'", slow).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the statement behind never ran")
		}
	}
	cancel() // Ctrl-C
	start := time.Now()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v once the store's context had ended: it waited for the statement behind", d.Round(time.Millisecond))
	}
}

// The session behind opens the database as the pools do, with the same
// URL: one that sets a pool's parameter (pool_max_conn_lifetime) was
// refused by the server, and the full statistics were never gathered.
func TestBehindOpensTheURLThePoolsOpen(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: SQLite runs nothing behind")
	}
	ctx := context.Background()
	path := reopenPath(openTest(t)) + "&pool_max_conn_lifetime=1h"
	if !strings.Contains(path, "?") {
		t.Fatalf("a URL with no query: %s", RedactURL(path))
	}
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Write(ctx, func(tx *Tx) error {
		tx.after = append(tx.after, "CREATE TABLE behind_ran (x integer)")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	var ran bool
	if err := again.r.QueryRow("SELECT to_regclass('behind_ran') IS NOT NULL").Scan(&ran); err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Error("the statement behind never ran")
	}
}

// The listener of a watcher opens the database as the pools do too: a URL
// with a pool's parameter was refused, and a mounted view could not
// follow other processes' commits.
func TestListenerOpensTheURLThePoolsOpen(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: SQLite's watcher reads data_version")
	}
	f, err := listenPostgres(context.Background(), reopenPath(openTest(t))+"&pool_max_conn_lifetime=1h")
	if err != nil {
		t.Fatal(err)
	}
	f.close()
}
