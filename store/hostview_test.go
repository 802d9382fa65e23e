package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The view of an index many hosts share names the host of every copy on
// another host ("" for this host's), in each query that lists or reads
// copies, and a group with no copy on this host has no thumbnail in it.
func TestViewNamesTheHostOfEachCopy(t *testing.T) {
	ctx := context.Background()
	a, b, ra, rb := twoHostRoots(t)
	var err error
	file := func(name string, ino uint64, content byte) FileStat {
		return FileStat{Name: name, Size: 10, Dev: 1, Ino: ino, Nlink: 1, Hash: &FileHash{Status: HashDone, Content: sum(content)}}
	}
	// Content 1 on both hosts; content 2 on host b only.
	addFiles(t, a, ra.ID, "/srv", file("x.jpg", 5, 1))
	addFiles(t, b, rb.ID, "/home", file("x.jpg", 5, 1), file("y.jpg", 6, 2), file("z.jpg", 7, 2))
	vw := a.View()
	g, err := vw.Group(ctx, a.HashAlgo(), sum(1))
	if err != nil {
		t.Fatal(err)
	}
	hostOf := map[string]string{} // path -> host
	ms, err := vw.CopiesPage(ctx, g.ID, 0, 10)
	if err != nil || len(ms) != 2 {
		t.Fatalf("copies %+v (%v), want two", ms, err)
	}
	for _, m := range ms {
		fm, err := vw.FileByID(ctx, m.FileID)
		if err != nil || fm.Host != m.Host {
			t.Fatalf("file %d: %+v (%v), host %q in the page", m.FileID, fm, err, m.Host)
		}
		bm, _, err := vw.MemberByID(ctx, g.GroupRef, m.FileID)
		if err != nil || bm.Host != m.Host {
			t.Fatalf("member %d: %+v (%v), host %q in the page", m.FileID, bm, err, m.Host)
		}
		hostOf[fm.Path()] = m.Host
	}
	if hostOf["/srv/x.jpg"] != "" || hostOf["/home/x.jpg"] != hostB.Name {
		t.Fatalf("hosts by path %v: want /srv/x.jpg on this host (\"\"), /home/x.jpg on %s", hostOf, hostB.Name)
	}
	if m, err := vw.MemberByName(ctx, g.GroupRef, "x.jpg"); err != nil || m.Host != hostOf[m.Path()] {
		t.Fatalf("member by name: %+v (%v)", m, err)
	}
	paths, err := vw.GroupPaths(ctx, g.ID)
	if err != nil || len(paths) != 2 {
		t.Fatalf("group paths %+v (%v)", paths, err)
	}
	for _, p := range paths {
		if p.Host != hostOf[p.Path] {
			t.Fatalf("group paths: %+v, want host %q", p, hostOf[p.Path])
		}
	}
	ahead, err := vw.CopiesAhead(ctx, g.ID, 1, 10)
	if err != nil || len(ahead) != 1 || len(ahead[0].Copies) != 2 {
		t.Fatalf("copies ahead %+v (%v)", ahead, err)
	}
	for i, m := range ahead[0].Copies {
		if m.Host != ms[i].Host {
			t.Fatalf("copies ahead %+v, want the hosts of the page %+v", ahead[0].Copies, ms)
		}
	}
	// Host b's view: the copy of a is the remote one.
	if bm, err := b.View().FileByID(ctx, ms[0].FileID); err != nil || (bm.Host == "") == (ms[0].Host == "") {
		t.Fatalf("host b reads file %d as on host %q (%v); host a as on %q", ms[0].FileID, bm.Host, err, ms[0].Host)
	}

	// Thumbnails are each host's own, made from its copies into its
	// cache: b makes both of its groups'; a's view shows neither (its
	// cache has no file of them), and a makes its own of the group it
	// holds a copy of, never of the other.
	g2, err := vw.Group(ctx, a.HashAlgo(), sum(2))
	if err != nil {
		t.Fatal(err)
	}
	candidates := func(db *DB) map[int64]bool {
		cs, err := db.Thumbs().ThumbCandidates(ctx, CandidateCursor{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int64]bool{}
		for _, c := range cs {
			out[c.ContentID] = true
		}
		return out
	}
	makeThumbs := func(db *DB, n int) {
		t.Helper()
		for range n {
			_, l, err := db.Thumbs().ClaimThumb(ctx, "w", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Thumbs().FinishThumbReady(ctx, l, 1, 1, 1); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := db.Thumbs().ClaimThumb(ctx, "w", time.Minute); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a thumbnail left to claim: %v", err)
		}
	}
	ready := func(db *DB) map[int64]bool {
		ts, err := db.View().ReadyThumbsPage(ctx, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int64]bool{}
		for _, th := range ts {
			out[th.ContentID] = true
			if _, err := db.View().ThumbByID(ctx, th.ID); err != nil {
				t.Fatalf("thumbnail %d listed, not read: %v", th.ID, err)
			}
		}
		return out
	}
	if got := candidates(b); !got[g.ID] || !got[g2.ID] {
		t.Fatalf("host b's thumbnail candidates %v, want both groups", got)
	}
	admit(t, b, 10, g.ID, g2.ID)
	makeThumbs(b, 2)
	if got := ready(b); !got[g.ID] || !got[g2.ID] {
		t.Fatalf("host b's view shows the thumbnails of %v; want both", got)
	}
	if got := ready(a); len(got) != 0 {
		t.Fatalf("host a's view shows the thumbnails of %v, made by b into b's cache", got)
	}
	if _, err := vw.ReadyThumb(ctx, a.HashAlgo(), sum(1)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("host a reads the thumbnail b made: %v", err)
	}
	if got := candidates(a); !got[g.ID] || got[g2.ID] {
		t.Fatalf("host a's thumbnail candidates %v, want group %d's (a copy on a), not %d's", got, g.ID, g2.ID)
	}
	admit(t, a, 10, g.ID)
	makeThumbs(a, 1)
	if got := ready(a); !got[g.ID] || got[g2.ID] {
		t.Fatalf("host a's view shows the thumbnails of %v; want group %d's, not %d's (no copy on a)", got, g.ID, g2.ID)
	}
	if n, err := a.Thumbs().ThumbCounts(ctx); err != nil || n[ThumbReady] != 1 {
		t.Fatalf("host a counts %v ready thumbnails (%v), want its one", n, err)
	}
	if _, err := vw.ReadyThumb(ctx, a.HashAlgo(), sum(2)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("host a reads the thumbnail of a group it holds no copy of: %v", err)
	}
	if _, err := b.View().ReadyThumb(ctx, a.HashAlgo(), sum(2)); err != nil {
		t.Fatalf("host b: %v", err)
	}
}
