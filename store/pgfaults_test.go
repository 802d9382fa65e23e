package store

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
)

// A server older than the oldest supported is refused with its version
// and the one needed, before anything is written.
func TestPostgresRefusesAnOldServer(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: the server's version")
	}
	u := testIndex(t)
	defer func(v int) { pgMinVersion = v }(pgMinVersion)
	pgMinVersion = 990000
	for _, opts := range []Options{{Path: u}, {Path: u, ReadOnly: true}} {
		db, err := Open(context.Background(), opts)
		if err == nil {
			db.Close()
			t.Fatalf("read-only %v: a server older than 99 opened", opts.ReadOnly)
		}
		if !errors.Is(err, ErrServer) || !strings.Contains(err.Error(), "dupefs needs 99 or later") {
			t.Errorf("read-only %v: %v, want ErrServer and the version needed", opts.ReadOnly, err)
		}
	}
}

// A login the server refuses says so, without the password.
func TestPostgresRefusedLoginSaysSo(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: the server's login")
	}
	p, err := url.Parse(testIndex(t))
	if err != nil {
		t.Fatal(err)
	}
	p.User = url.UserPassword("nobody", "s3cret")
	for _, opts := range []Options{{Path: p.String()}, {Path: p.String(), ReadOnly: true}} {
		db, err := Open(context.Background(), opts)
		if err == nil {
			db.Close()
			t.Fatalf("read-only %v: a login of no role opened", opts.ReadOnly)
		}
		if !errors.Is(err, ErrServer) || !strings.Contains(err.Error(), "refused the login") {
			t.Errorf("read-only %v: %v, want ErrServer and the login refused", opts.ReadOnly, err)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the password is shown: %v", err)
		}
	}
}

// The writer's commits are not waited on to reach the disk, as SQLite's
// synchronous=NORMAL: unless the URL says otherwise.
func TestPostgresWriterCommitsAsSQLiteNormal(t *testing.T) {
	if !onPostgresTest(t) {
		t.Skip("PostgreSQL only: the server's settings")
	}
	u := testIndex(t)
	for _, c := range []struct{ url, want string }{{u, "off"}, {u + "&synchronous_commit=on", "on"}} {
		db, err := Open(context.Background(), Options{Path: c.url})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = db.w.QueryRow("SELECT current_setting('synchronous_commit')").Scan(&got)
		db.Close()
		if err != nil || got != c.want {
			t.Errorf("%s: synchronous_commit %q (%v), want %q", RedactURL(c.url), got, err, c.want)
		}
	}
}
