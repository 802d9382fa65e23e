package fusefs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/internal/pgtest"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// openHost opens the PostgreSQL index at url as host name.
func openHost(tb testing.TB, url, name string) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), store.Options{Path: url,
		Host: store.Host{Name: name, MachineID: "m-" + name}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// In an index two hosts share, the view of one lists the other's copy as
// a symlink to /net/HOST/path (or under the prefix given for that host,
// and a symlink still when copies are served as files), named HOST:name,
// in /files after its root and host; a folder of the other host in a
// folder group alike, in /by-folder and /folders.
// With AllowOther another user never sees it: not even where a local
// file they may read lies at the same path with the same inode numbers
// (the local check says nothing of the other host's file).
func TestCopyOnAnotherHostLinksToIt(t *testing.T) {
	testenv.NeedFUSE(t)
	url := pgtest.URL(t)
	laptop := openHost(t, url, "laptop")
	nas := openHost(t, url, "nas")
	top := t.TempDir()
	root, there := filepath.Join(top, "laptop"), filepath.Join(top, "nas")
	for _, d := range []string{filepath.Dir(top), top, root, filepath.Join(root, "a"), filepath.Join(root, "b"), there} {
		os.MkdirAll(d, 0o755)
		os.Chmod(d, 0o755)
	}
	a, b, n := filepath.Join(root, "a", "IMG.jpg"), filepath.Join(root, "b", "IMG.jpg"), filepath.Join(there, "IMG.jpg")
	for _, p := range []string{a, b, n} {
		if err := os.WriteFile(p, []byte("one photo"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	indexAs(t, laptop, root, a, b)
	// The nas's copy: its path and inode numbers those of a file here
	// that anyone may read, which this host does not index.
	scanAsHost(t, nas, n)
	foldHosts(t, nas, laptop)
	fgs, err := laptop.View().FolderGroupsPage(context.Background(), 0, 10)
	if err != nil || len(fgs) != 1 || fgs[0].Folders != 3 {
		t.Fatalf("folder groups %+v (%v), want one of a, b and the nas's folder", fgs, err)
	}
	folderKey := naming.GroupKey("sha256", fgs[0].Sig)

	check := func(cfg Config, prefix string) {
		t.Helper()
		target := prefix + n
		tf := mountDB(t, laptop, t.TempDir(), cfg, nil)
		dir := filepath.Join(tf.mnt, "by-hash", keyOf(9))
		names := tf.names("by-hash/" + keyOf(9))
		var remote []string
		for _, n := range names {
			if strings.HasPrefix(n, "nas:") {
				remote = append(remote, n)
			}
		}
		if len(names) != 3 || len(remote) != 1 || !slices.Contains(names, "IMG.jpg") {
			t.Fatalf("group: %q, want IMG.jpg, IMG~ID.jpg and one nas:IMG~ID.jpg", names)
		}
		got, err := os.Readlink(filepath.Join(dir, remote[0]))
		if err != nil || got != target {
			t.Fatalf("%s -> %q (%v), want %q", remote[0], got, err, target)
		}
		for _, n := range names {
			fi, err := os.Lstat(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			wantLink := !cfg.ServeFiles || n == remote[0]
			if (fi.Mode()&os.ModeSymlink != 0) != wantLink {
				t.Errorf("%s: mode %v, want a symlink: %v", n, fi.Mode(), wantLink)
			}
		}
		if _, err := os.Lstat(filepath.Join(dir, strings.TrimPrefix(remote[0], "nas:"))); err == nil {
			t.Errorf("the nas's copy answers under its name without its host too")
		}
		if _, err := os.Lstat(filepath.Join(dir, "laptop:IMG.jpg")); err == nil {
			t.Errorf("a copy of this host answers under HOST:name")
		}
		// /files names the host of the nas's copy, and links to it alike.
		labels := tf.names("files")
		if len(labels) != 1 {
			t.Fatalf("/files: %q, want one group", labels)
		}
		places := tf.names("files/" + labels[0])
		var onNas []string
		for _, n := range places {
			if strings.HasPrefix(n, "nas on nas") {
				onNas = append(onNas, n)
			}
		}
		if len(places) != 3 || len(onNas) != 1 {
			t.Fatalf("/files/%s: %q, want three copies, one named \"nas on nas › IMG.jpg\"", labels[0], places)
		}
		if got, err := os.Readlink(filepath.Join(tf.mnt, "files", labels[0], onNas[0])); err != nil || got != target {
			t.Fatalf("/files: %s -> %q (%v), want %q", onNas[0], got, err, target)
		}
		// The folder group: the nas's folder links to it there, named
		// nas:nas in /by-folder, "nas on nas" in /folders.
		if got, err := os.Readlink(filepath.Join(tf.mnt, "by-folder", folderKey, "nas:nas")); err != nil || got != prefix+there {
			t.Fatalf("/by-folder/%s/nas:nas -> %q (%v), want %q (listed: %q)", folderKey, got, err, prefix+there,
				tf.names("by-folder/"+folderKey))
		}
		flabels := tf.names("folders")
		if len(flabels) != 1 {
			t.Fatalf("/folders: %q, want one group", flabels)
		}
		if got, err := os.Readlink(filepath.Join(tf.mnt, "folders", flabels[0], "nas on nas")); err != nil || got != prefix+there {
			t.Fatalf("/folders/%s/nas on nas -> %q (%v), want %q (listed: %q)", flabels[0], got, err, prefix+there,
				tf.names("folders/"+flabels[0]))
		}
		if !cfg.AllowOther {
			return
		}
		other := &caller{uid: 1002, gid: 1002, key: "1002:1002"}
		copies, err := tf.fs.db.CopiesPage(context.Background(), mustGroup(t, tf).ID, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range copies {
			if seen := tf.fs.visible(other, ino(kindLink, m.FileID)); seen != (m.Host == "") {
				t.Errorf("another user sees copy %d on host %q: %v", m.FileID, m.Host, seen)
			}
			if !tf.fs.visible(nil, ino(kindLink, m.FileID)) {
				t.Errorf("the mounting user does not see copy %d", m.FileID)
			}
		}
		ms, err := tf.fs.db.FolderMembersPage(context.Background(), fgs[0].ID, 0, 10)
		if err != nil || len(ms) != 3 {
			t.Fatalf("folders of the group: %+v (%v)", ms, err)
		}
		for _, m := range ms {
			for _, node := range []uint64{ino(kindFolderLink, m.FolderID), ino(kindPeopleFolder, m.FolderID)} {
				if seen := tf.fs.visible(other, node); seen != (m.Host == "") {
					t.Errorf("another user sees folder %s on host %q: %v", m.Path, m.Host, seen)
				}
			}
		}
		if !tf.fs.visible(other, ino(kindGroup, mustGroup(t, tf).ID)) {
			t.Error("another user does not see the group of two local copies they may read")
		}
		if tf.fs.listingPublic(ino(kindGroup, mustGroup(t, tf).ID)) {
			t.Error("a listing with another host's copy in it is kept for every user")
		}
	}
	check(Config{}, "/net/nas")
	check(Config{ServeFiles: true, AllowOther: true, RemotePrefix: map[string]string{"nas": "/mnt/nas/"}}, "/mnt/nas")
}

func mustGroup(tb testing.TB, tf *testFS) store.GroupInfo {
	tb.Helper()
	g, err := tf.fs.db.Group(context.Background(), "sha256", sum(9))
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// A pair of folders that overlap in part, one on each host: in /overlap
// the nas's side is named after its root and host, and its files link
// there; another user sees no part of the pair.
func TestOverlapWithAnotherHost(t *testing.T) {
	testenv.NeedFUSE(t)
	url := pgtest.URL(t)
	laptop := openHost(t, url, "laptop")
	nas := openHost(t, url, "nas")
	top := t.TempDir()
	files := map[string]string{}
	for i := range 40 {
		files[fmt.Sprintf("laptop/git/g%03d", i)] = body(i+100, 300)
		files[fmt.Sprintf("nas/git/g%03d", i)] = body(i+100, 300)
	}
	files["laptop/git/mine"], files["nas/git/theirs"] = body(7, 300), body(8, 300)
	writeTree(t, top, files)
	for _, h := range []struct {
		db   *store.DB
		root string
	}{{nas, "nas"}, {laptop, "laptop"}} {
		if _, _, err := h.db.Files().AddRoot(context.Background(), store.RootSpec{Path: filepath.Join(top, h.root)}, true); err != nil {
			t.Fatal(err)
		}
		if err := indexer.New(indexer.IndexOf(h.db), indexer.Config{Workers: 2}).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	tf := mountDB(t, laptop, t.TempDir(), Config{AllowOther: true}, nil)
	labels := tf.names("overlap")
	if len(labels) != 1 {
		t.Fatalf("/overlap: %q, want one pair", labels)
	}
	sides := tf.names("overlap/" + labels[0])
	theirs := "only in nas on nas"
	if !slices.Contains(sides, theirs) || !slices.Contains(sides, "only in laptop") {
		t.Fatalf("/overlap/%s: %q, want %q and the laptop's side", labels[0], sides, theirs)
	}
	want := "/net/nas" + filepath.Join(top, "nas/git/theirs")
	only := tf.names("overlap/" + labels[0] + "/" + theirs)
	if len(only) != 1 {
		t.Fatalf("only in the nas's folder: %q, want its one file", only)
	}
	if got, err := os.Readlink(filepath.Join(tf.mnt, "overlap", labels[0], theirs, only[0])); err != nil || got != want {
		t.Fatalf("the nas's file %s -> %q (%v), want %q", only[0], got, err, want)
	}
	ps, err := tf.fs.db.PairsPage(context.Background(), 0, 10)
	if err != nil || len(ps) != 1 {
		t.Fatalf("pairs %+v (%v)", ps, err)
	}
	other := &caller{uid: 1002, gid: 1002, key: "1002:1002"}
	if tf.fs.visible(other, ino(kindPair, ps[0].ID)) {
		t.Error("another user sees a pair with a side on another host")
	}
}

// scanAsHost records the file at path, alone in its folder, as db's
// host's scan would, with the content sum(9).
func scanAsHost(t *testing.T, db *store.DB, path string) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	(&testFS{tb: t, db: db}).scan(dir, []scanned{{dir, store.FileStat{Name: filepath.Base(path), Size: st.Size,
		MtimeNS: st.Mtim.Nano(), Dev: st.Dev, Ino: st.Ino, Nlink: 1,
		Hash: &store.FileHash{Status: store.HashDone, Content: sum(9)}}}})
}

// foldHosts brings the folder sums and groups up to date through each
// host's index.
func foldHosts(t *testing.T, dbs ...*store.DB) {
	t.Helper()
	for _, db := range dbs {
		if _, err := db.Folders().UpdateFolderSigs(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
