package integration

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dupefs/dupefs/internal/pgtest"
)

// A view mounted over a PostgreSQL index follows the commits of another
// process (`dupefs index` run beside it) within the README's 2 seconds
// (polled for at most 3, as TestMountFollowsTheDisk does), and goes on
// following them after the server restarts under it.
func TestMountFollowsAPostgresIndexAcrossARestart(t *testing.T) {
	db := pgtest.URL(t)
	base := t.TempDir()
	tree := filepath.Join(base, "tree")
	mnt := filepath.Join(base, "mnt")
	for _, d := range []string{tree, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	put := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(tree, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	photo, song := strings.Repeat("a photo ", 4000), strings.Repeat("a song ", 5000)
	put("a.jpg", photo)
	put("b.mp3", song)
	mustRun(t, db, "index", tree)
	startMount(t, db, mnt, "--no-index")
	if got := mountedGroups(t, mnt, base); len(got) != 0 {
		t.Fatalf("groups before any copy: %q", got)
	}
	const limit = 3 * time.Second
	put("c.jpg", photo)
	mustRun(t, db, "index", tree)
	viewWithin(t, mnt, base, limit, "another process's commit", [][]string{{"tree/a.jpg", "tree/c.jpg"}})
	keys, err := os.ReadDir(filepath.Join(mnt, "by-hash"))
	if err != nil || len(keys) != 1 {
		t.Fatalf("by-hash: %v %v", keys, err)
	}
	// The kernel keeps the group's folder a minute unless told it went.
	photos := filepath.Join(mnt, "by-hash", keys[0].Name())
	if _, err := os.Stat(photos); err != nil {
		t.Fatal(err)
	}

	pgtest.Restart(t)
	if err := os.Remove(filepath.Join(tree, "c.jpg")); err != nil {
		t.Fatal(err)
	}
	put("d.mp3", song)
	mustRun(t, db, "index", tree)
	viewWithin(t, mnt, base, limit, "a commit after the server restarted", [][]string{{"tree/b.mp3", "tree/d.mp3"}})
	waitFor(t, limit, "the group gone after the restart to leave the kernel's cache", func() bool {
		_, err := os.Stat(photos)
		return errors.Is(err, fs.ErrNotExist)
	})
}
