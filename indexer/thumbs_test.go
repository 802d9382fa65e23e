package indexer

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
	"github.com/dupefs/dupefs/store"
)

func TestThumbnailsOfEveryFormat(t *testing.T) {
	e := newEnv(t)
	shapes := map[string][2]int{
		"photo.jpg": {1600, 1200}, "tall.png": {60, 900}, "wide.gif": {900, 60}, "tiny.bmp": {1, 1},
		"scan.tiff": {300, 300}, "pic.webp": {0, 0}, "huge.jpg": {7000, 5000},
	}
	for name, wh := range shapes {
		writeImage(t, filepath.Join(e.dir, name), wh[0], wh[1])
		copyFile(t, filepath.Join(e.dir, name), filepath.Join(e.dir, "copies", name))
	}
	good, _ := os.ReadFile(filepath.Join(e.dir, "photo.jpg"))
	tree(t, e.dir, map[string]string{
		"broken.jpg": string(good[:len(good)/3]), "copies/broken.jpg": string(good[:len(good)/3]),
		"notes.txt": "same words", "copies/notes.txt": "same words",
	})
	writeImage(t, filepath.Join(e.dir, "alone.png"), 50, 50)
	e.addRoot(store.RootSpec{})
	e.run()
	before := fingerprint(t, e.dir)

	cfg := e.thumbConfig()
	cfg.MemoryBudget = 8 << 20 // the 35-megapixel one needs more: it decodes alone
	e.drain(cfg)

	for name, wh := range shapes {
		row, ok := e.thumbOf(name)
		if !ok {
			t.Fatalf("%s: no thumbnail", name)
		}
		checkThumb(t, cfg.Dir, row, wh[0], wh[1])
	}
	if row, ok := e.thumbOf("broken.jpg"); !ok || row.Status != store.ThumbFailed || row.ErrorCode != "corrupt_image" {
		t.Fatalf("broken image: %+v", row)
	}
	if _, ok := e.thumbOf("notes.txt"); ok {
		t.Fatal("a text file got a thumbnail row")
	}
	if _, ok := e.thumbOf("alone.png"); ok {
		t.Fatal("an image without a copy got a thumbnail row")
	}
	sameFingerprint(t, before, fingerprint(t, e.dir))
	ents, _ := os.ReadDir(cfg.Dir)
	if len(ents) != len(shapes) {
		t.Fatalf("cache holds %d files, want %d thumbnails", len(ents), len(shapes))
	}
	// A second drain has nothing to do: no failed row is retried before
	// its retry_after.
	row, _ := e.thumbOf("broken.jpg")
	th := e.drain(cfg)
	again, _ := e.thumbOf("broken.jpg")
	if again.Attempt != row.Attempt || again.ErrorCount != 1 {
		t.Fatalf("failed row retried before retry_after: %+v -> %+v", row, again)
	}
	if th.cfg.Progress.ThumbsMade.Load() != 0 {
		t.Fatalf("second drain made %d thumbnails", th.cfg.Progress.ThumbsMade.Load())
	}
}

func TestFailedThumbRetriedAfterBackoff(t *testing.T) {
	e := newEnv(t)
	tree(t, e.dir, map[string]string{"a.png": "not a png", "b.png": "not a png"})
	e.addRoot(store.RootSpec{})
	e.run()
	cfg := e.thumbConfig()
	cfg.FailBackoff = 50 * time.Millisecond
	clk := fakeClock(t)
	e.drain(cfg)
	first, _ := e.thumbOf("a.png")
	if first.Status != store.ThumbFailed || first.ErrorCount != 1 || first.RetryAfter.IsZero() {
		t.Fatalf("first try: %+v", first)
	}
	e.drain(cfg) // the store's clock has not moved: not retried yet
	if again, _ := e.thumbOf("a.png"); again.Attempt != first.Attempt {
		t.Fatalf("retried before its retry_after: %+v -> %+v", first, again)
	}
	clk.Advance(51 * time.Millisecond) // the first backoff is 50ms
	e.drain(cfg)
	second, _ := e.thumbOf("a.png")
	if second.ErrorCount < 2 || second.Attempt <= first.Attempt {
		t.Fatalf("not retried after retry_after: %+v", second)
	}
	if !second.RetryAfter.After(first.RetryAfter) {
		t.Fatalf("backoff did not grow: %v then %v", first.RetryAfter, second.RetryAfter)
	}
}

func TestVideoThumbnailNeedsFFmpeg(t *testing.T) {
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatal("ffmpeg is needed for this test: apt-get install ffmpeg")
	}
	e := newEnv(t)
	clip := filepath.Join(e.dir, "clip.mp4")
	out, err := exec.Command(ffmpeg, "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=640x360:duration=2",
		"-pix_fmt", "yuv420p", clip).CombinedOutput()
	if err != nil {
		t.Fatalf("make a video: %v\n%s", err, out)
	}
	copyFile(t, clip, filepath.Join(e.dir, "backup", "clip.mp4"))
	e.addRoot(store.RootSpec{})
	e.run()

	cfg := e.thumbConfig()
	cfg.FFmpeg = filepath.Join(t.TempDir(), "no-ffmpeg-here")
	e.drain(cfg)
	row, _ := e.thumbOf("clip.mp4")
	if row.Status != store.ThumbFailed || row.ErrorCode != "ffmpeg_missing" || row.MediaType != "video" {
		t.Fatalf("without ffmpeg: %+v", row)
	}
	e.drain(cfg) // still missing: not retried
	if again, _ := e.thumbOf("clip.mp4"); again.Attempt != row.Attempt {
		t.Fatalf("retried while ffmpeg is still missing: %+v", again)
	}
	cfg.FFmpeg = ""
	e.drain(cfg)
	row, _ = e.thumbOf("clip.mp4")
	checkThumb(t, cfg.Dir, row, 640, 360)
}

func TestStaleThumbLeaseIsRequeued(t *testing.T) {
	e := newEnv(t)
	writeImage(t, filepath.Join(e.dir, "a.png"), 100, 80)
	copyFile(t, filepath.Join(e.dir, "a.png"), filepath.Join(e.dir, "b.png"))
	writeImage(t, filepath.Join(e.dir, "c.jpg"), 80, 100)
	copyFile(t, filepath.Join(e.dir, "c.jpg"), filepath.Join(e.dir, "d.jpg"))
	e.addRoot(store.RootSpec{})
	e.run()
	ctx := context.Background()
	cs, _ := e.db.Thumbs().ThumbCandidates(ctx, store.CandidateCursor{}, 10)
	as := []store.Admission{{ContentID: cs[0].ContentID, MediaType: "image"}, {ContentID: cs[1].ContentID, MediaType: "image"}}
	if _, _, err := e.db.Thumbs().AdmitThumbs(ctx, as, 10); err != nil {
		t.Fatal(err)
	}
	// One worker of another host claims a row and vanishes: its lease
	// expires. One of a process of this host that is gone is requeued at
	// once.
	clk := fakeClock(t)
	_, lost, err := e.db.Thumbs().ClaimThumb(ctx, "otherhost/1/1/ab", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	_, dead, err := e.db.Thumbs().ClaimThumb(ctx, deadWorkerID(t), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(101 * time.Millisecond) // the lost worker's lease expires
	cfg := e.thumbConfig()
	e.drain(cfg)
	for _, l := range []store.Lease{lost, dead} {
		row, err := e.db.View().ThumbByID(ctx, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		checkThumb(t, cfg.Dir, row, 0, 0)
		if row.Attempt != l.Attempt+1 {
			t.Fatalf("row %d: attempt %d, want %d", row.ID, row.Attempt, l.Attempt+1)
		}
	}
	if err := e.db.Thumbs().FinishThumbReady(ctx, lost, 1, 1, 1); err == nil {
		t.Fatal("the vanished worker could still finish its row")
	}
}

// testHost is the host the tests' processes work as: the machine's name
// and id, as a store opened with no Host registers.
var testHost = store.Host{Name: func() string { h, _ := os.Hostname(); return h }(), MachineID: store.ReadMachineID()}

// deadWorkerID is the worker id of a process of this machine, boot and pid
// namespace that has ended.
func deadWorkerID(tb testing.TB) string {
	tb.Helper()
	f := strings.Split(NewWorkerID(testHost), "/")
	f[4], f[5], f[6] = deadPid(tb), "12345", "dead"
	return strings.Join(f, "/")
}

// deadPid is the pid of a process that has ended.
func deadPid(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		tb.Fatal(err)
	}
	return itoa(cmd.Process.Pid)
}

func TestCleanupRemovesOnlyCacheFiles(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"keep.jpg", "gone.png"} {
		writeImage(t, filepath.Join(e.dir, n), 120, 90)
		copyFile(t, filepath.Join(e.dir, n), filepath.Join(e.dir, "copy", n))
	}
	e.addRoot(store.RootSpec{})
	e.run()
	cfg := e.thumbConfig()
	cfg.CleanupDelay = -1 // at once
	e.drain(cfg)
	gone, ok := e.thumbOf("gone.png")
	if !ok || gone.Status != store.ThumbReady {
		t.Fatalf("thumbnail of gone.png: %+v", gone)
	}
	keep, _ := e.thumbOf("keep.jpg")

	// A foreign file in the cache, and the group of gone.png breaks up.
	foreign := filepath.Join(cfg.Dir, "notes-of-the-user.txt")
	os.WriteFile(foreign, []byte("mine"), 0o644)
	if err := os.Remove(filepath.Join(e.dir, "copy", "gone.png")); err != nil {
		t.Fatal(err)
	}
	e.run()
	before := fingerprint(t, e.dir)
	e.drain(cfg)

	if _, err := os.Stat(filepath.Join(cfg.Dir, gone.Key+".jpg")); !os.IsNotExist(err) {
		t.Fatalf("the thumbnail of a gone group is still cached: %v", err)
	}
	if _, err := e.db.View().ThumbByID(context.Background(), gone.ID); err == nil {
		t.Fatal("the row of a gone group's thumbnail is still there")
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, keep.Key+".jpg")); err != nil {
		t.Fatalf("the thumbnail of a live group was removed: %v", err)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Fatalf("cleanup removed a file it did not make: %v", err)
	}
	sameFingerprint(t, before, fingerprint(t, e.dir))
	if _, err := os.Stat(filepath.Join(e.dir, "gone.png")); err != nil {
		t.Fatalf("cleanup touched the remaining original: %v", err)
	}
}

func TestThumbSourceOutsideRootsIsRefused(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(filepath.Dir(e.dir), "outside")
	writeImage(t, filepath.Join(outside, "a.jpg"), 64, 64)
	copyFile(t, filepath.Join(outside, "a.jpg"), filepath.Join(outside, "b.jpg"))
	if err := os.Symlink(outside, filepath.Join(e.dir, "link")); err != nil {
		t.Fatal(err)
	}
	e.addRoot(store.RootSpec{FollowSymlinks: true})
	e.run()
	if len(e.groups()) != 1 {
		t.Fatalf("groups: %v", e.groups())
	}
	cfg := e.thumbConfig()
	e.drain(cfg)
	row, ok := e.thumbOf("link/a.jpg")
	if !ok || row.Status != store.ThumbFailed || row.ErrorCode != CodeOutsideRoots {
		t.Fatalf("a source outside the roots: %+v", row)
	}
}

func TestThumbReadsGoThroughTheGlobalLimiter(t *testing.T) {
	e := newEnv(t)
	var total int64
	for i := range 3 {
		p := filepath.Join(e.dir, "p"+itoa(i)+".png")
		writeImage(t, p, 200+i, 150)
		copyFile(t, p, filepath.Join(e.dir, "q", "p"+itoa(i)+".png"))
		fi, _ := os.Stat(p)
		total += fi.Size()
	}
	e.addRoot(store.RootSpec{})
	e.run()
	cfg := e.thumbConfig()
	cfg.MaxBytesPerSec = total * 4 // 250ms for the three
	ctx := context.Background()
	start := time.Now()
	e.drain(cfg)
	// The bucket moved on by the cost of every read: the next slot is
	// at least total/rate after the start.
	next, err := e.db.Jobs().ReserveIO(ctx, store.IOBucketThumbs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := next.Sub(start); d < 240*time.Millisecond {
		t.Fatalf("the limiter's bucket moved %v for %d bytes at %d/s", d, total, cfg.MaxBytesPerSec)
	}
}

func TestVerifyCacheRemakesLostFiles(t *testing.T) {
	e := newEnv(t)
	writeImage(t, filepath.Join(e.dir, "a.gif"), 90, 90)
	copyFile(t, filepath.Join(e.dir, "a.gif"), filepath.Join(e.dir, "b.gif"))
	e.addRoot(store.RootSpec{})
	e.run()
	cfg := e.thumbConfig()
	e.drain(cfg)
	row, _ := e.thumbOf("a.gif")
	os.Remove(filepath.Join(cfg.Dir, row.Key+".jpg"))
	e.drain(cfg)
	again, _ := e.thumbOf("a.gif")
	checkThumb(t, cfg.Dir, again, 90, 90)
	if again.Attempt != row.Attempt+1 {
		t.Fatalf("lost file not made again: attempt %d -> %d", row.Attempt, again.Attempt)
	}
}

func TestServeMakesThumbnailsOfNewGroups(t *testing.T) {
	e := newEnv(t)
	writeImage(t, filepath.Join(e.dir, "a.png"), 40, 30)
	copyFile(t, filepath.Join(e.dir, "a.png"), filepath.Join(e.dir, "b.png"))
	e.addRoot(store.RootSpec{})
	e.run()
	cfg := e.thumbConfig()
	cfg.PollInterval = 20 * time.Millisecond
	th, err := NewThumbnailer(ThumbIndexOf(e.db), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- th.Serve(ctx) }()
	defer func() {
		cancel()
		if err := testenv.Recv(t, done, 30*time.Second, "Serve to return once cancelled"); err != nil {
			t.Error(err)
		}
	}()
	waitReady := func(rel string) {
		t.Helper()
		testenv.Eventually(t, 10*time.Second, "a thumbnail of "+rel, func() bool {
			row, ok := e.thumbOf(rel)
			return ok && row.Status == store.ThumbReady
		})
	}
	waitReady("a.png")
	// A group that appears later is picked up from the change feed.
	writeImage(t, filepath.Join(e.dir, "c.jpg"), 50, 20)
	copyFile(t, filepath.Join(e.dir, "c.jpg"), filepath.Join(e.dir, "d.jpg"))
	e.run()
	waitReady("c.jpg")
}

// A thumbnail cache others could enter (an older dupefs, or a folder made
// 0755 by hand) is made private when it is next used, and the user told.
func TestThumbnailCacheIsPrivate(t *testing.T) {
	e := newEnv(t)
	cfg := e.thumbConfig()
	os.MkdirAll(cfg.Dir, 0o755)
	os.Chmod(cfg.Dir, 0o755)
	thumb := filepath.Join(cfg.Dir, "x.jpg")
	os.WriteFile(thumb, []byte("jpeg"), 0o644)
	var warned []string
	cfg.Warn = func(s string) { warned = append(warned, s) }
	if _, err := NewThumbnailer(ThumbIndexOf(e.db), cfg); err != nil {
		t.Fatal(err)
	}
	d, _ := os.Stat(cfg.Dir)
	f, _ := os.Stat(thumb)
	if d.Mode().Perm() != 0o700 || f.Mode().Perm() != 0o600 || len(warned) != 1 {
		t.Errorf("cache %v, thumbnail %v, told %q; want 0700, 0600 and one notice", d.Mode(), f.Mode(), warned)
	}
}

// A thumbnail cache another user made first (or a symlink of theirs at
// its place) is refused: thumbnails of private photos would be theirs to
// read.
func TestThumbnailCacheOfAnotherUserIsRefused(t *testing.T) {
	testenv.NeedRoot(t, "it gives a folder to another user")
	e := newEnv(t)
	cfg := e.thumbConfig()
	os.MkdirAll(cfg.Dir, 0o700)
	os.Chown(cfg.Dir, 65534, 65534)
	if _, err := NewThumbnailer(ThumbIndexOf(e.db), cfg); err == nil || !strings.Contains(err.Error(), "owner 65534") {
		t.Errorf("a cache of user 65534's: %v, want refused", err)
	}
	theirs := filepath.Join(t.TempDir(), "theirs")
	os.Mkdir(theirs, 0o700)
	os.Chown(theirs, 65534, 65534)
	link := cfg.Dir + "-link"
	os.Symlink(theirs, link)
	os.Lchown(link, 65534, 65534)
	cfg.Dir = link
	if _, err := NewThumbnailer(ThumbIndexOf(e.db), cfg); err == nil {
		t.Error("a symlink of user 65534's as the cache: accepted")
	}
	if ents, _ := os.ReadDir(theirs); len(ents) != 0 {
		t.Errorf("the thumbnailer wrote in another user's folder: %v", ents)
	}
}
