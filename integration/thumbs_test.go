package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// photo encodes a w x h picture as JPEG or PNG (by the name's extension).
func photo(tb testing.TB, path string, w, h int, seed uint8) {
	tb.Helper()
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.SetRGBA(x, y, color.RGBA{uint8(x) + seed, uint8(y), seed * 3, 255})
		}
	}
	var buf bytes.Buffer
	var err error
	if filepath.Ext(path) == ".png" {
		err = png.Encode(&buf, m)
	} else {
		err = jpeg.Encode(&buf, m, &jpeg.Options{Quality: 85})
	}
	if err != nil {
		tb.Fatal(err)
	}
	writeFile(tb, path, buf.Bytes())
}

func writeFile(tb testing.TB, path string, b []byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

func duplicate(tb testing.TB, src, dst string) {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	writeFile(tb, dst, b)
}

// keyOfFile is the group key of a file's content.
func keyOfFile(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// snapshot maps every file under dir to its bytes' hash and mtime.
func snapshot(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		h := sha256.Sum256(b)
		out[p] = hex.EncodeToString(h[:]) + " " + fi.ModTime().String() + " " + fi.Mode().String()
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// mediaTree writes duplicated photos, a broken image, a text file and,
// when ffmpeg is there, a video; it returns the keys of the groups that
// must get a thumbnail and of those that must not.
func mediaTree(tb testing.TB, dir string, video bool) (want, none []string) {
	tb.Helper()
	photo(tb, filepath.Join(dir, "photos/beach.jpg"), 2400, 1600, 1)
	photo(tb, filepath.Join(dir, "photos/tall.png"), 300, 1200, 2)
	photo(tb, filepath.Join(dir, "photos/alone.jpg"), 500, 500, 3)
	duplicate(tb, filepath.Join(dir, "photos/beach.jpg"), filepath.Join(dir, "backup/beach copy.jpg"))
	duplicate(tb, filepath.Join(dir, "photos/tall.png"), filepath.Join(dir, "backup/old/tall.png"))
	good, _ := os.ReadFile(filepath.Join(dir, "photos/beach.jpg"))
	writeFile(tb, filepath.Join(dir, "photos/broken.jpg"), good[:len(good)/2])
	writeFile(tb, filepath.Join(dir, "backup/broken.jpg"), good[:len(good)/2])
	writeFile(tb, filepath.Join(dir, "notes.txt"), []byte("the same words\n"))
	writeFile(tb, filepath.Join(dir, "backup/notes.txt"), []byte("the same words\n"))
	want = []string{keyOfFile(tb, filepath.Join(dir, "photos/beach.jpg")), keyOfFile(tb, filepath.Join(dir, "photos/tall.png"))}
	none = []string{keyOfFile(tb, filepath.Join(dir, "photos/broken.jpg")), keyOfFile(tb, filepath.Join(dir, "notes.txt")),
		keyOfFile(tb, filepath.Join(dir, "photos/alone.jpg"))}
	if video {
		clip := filepath.Join(dir, "videos/clip.mp4")
		os.MkdirAll(filepath.Dir(clip), 0o755)
		out, err := exec.Command("ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=1280x720:duration=3",
			"-pix_fmt", "yuv420p", clip).CombinedOutput()
		if err != nil {
			tb.Fatalf("make a video (ffmpeg is needed: apt-get install ffmpeg): %v\n%s", err, out)
		}
		duplicate(tb, clip, filepath.Join(dir, "backup/clip.mp4"))
		want = append(want, keyOfFile(tb, clip))
	}
	sort.Strings(want)
	return want, none
}

// thumbStatus is the thumbnails part of status.json.
type thumbStatus struct {
	Thumbnails struct {
		Pending, Running, Ready, Failed int
	} `json:"thumbnails"`
}

func readThumbStatus(tb testing.TB, b []byte) thumbStatus {
	tb.Helper()
	var s thumbStatus
	if err := json.Unmarshal(b, &s); err != nil {
		tb.Fatalf("status does not parse: %v\n%s", err, b)
	}
	return s
}

func TestMountServesThumbnails(t *testing.T) {
	base := t.TempDir()
	tree, mnt, db := filepath.Join(base, "tree"), filepath.Join(base, "mnt"), filepath.Join(base, "index.db")
	cacheHome := filepath.Join(base, "xdg-cache")
	os.Mkdir(mnt, 0o755)
	want, none := mediaTree(t, tree, true)
	before := snapshot(t, tree)

	p := startMountEnv(t, []string{"XDG_CACHE_HOME=" + cacheHome}, db, mnt, tree)
	thumbs := filepath.Join(mnt, "thumbs")
	var names []string
	waitFor(t, 60*time.Second, "a thumbnail of every duplicated image and video", func() bool {
		ents, err := os.ReadDir(thumbs)
		if err != nil {
			t.Fatalf("read /thumbs: %v\n%s", err, mountLog(mnt))
		}
		names = names[:0]
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return len(names) >= len(want)
	})
	sort.Strings(names)
	for i, k := range want {
		if i >= len(names) || names[i] != k+".jpg" {
			t.Fatalf("/thumbs lists %q, want %q", names, want)
		}
	}
	if len(names) != len(want) {
		t.Fatalf("/thumbs lists %q, want only %q", names, want)
	}
	for _, k := range none {
		if _, err := os.Stat(filepath.Join(thumbs, k+".jpg")); err == nil {
			t.Fatalf("a thumbnail of %s, which is broken, text or unique", k)
		}
	}
	for _, n := range names {
		p := filepath.Join(thumbs, n)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != int64(len(b)) || fi.Size() == 0 {
			t.Fatalf("%s: st_size %d, read %d bytes", n, fi.Size(), len(b))
		}
		cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
		if err != nil || format != "jpeg" || cfg.Width > 512 || cfg.Height > 512 {
			t.Fatalf("%s: %s %dx%d %v", n, format, cfg.Width, cfg.Height, err)
		}
		if _, err := jpeg.Decode(bytes.NewReader(b)); err != nil {
			t.Fatalf("%s does not decode: %v", n, err)
		}
		cached, err := os.ReadFile(filepath.Join(cacheHome, "dupefs", "thumbs", n))
		if err != nil || !bytes.Equal(cached, b) {
			t.Fatalf("%s is not the file in $XDG_CACHE_HOME/dupefs/thumbs: %v", n, err)
		}
	}
	waitFor(t, 30*time.Second, "the broken image to fail", func() bool {
		b, err := os.ReadFile(filepath.Join(mnt, "status.json"))
		if err != nil {
			t.Fatal(err)
		}
		s := readThumbStatus(t, b)
		return s.Thumbnails.Ready == len(want) && s.Thumbnails.Failed == 1
	})
	p.stop(t)
	if !bytes.Contains(p.stderr.Bytes(), []byte("corrupt_image")) {
		t.Errorf("the broken image's failure was not reported:\n%s", p.stderr)
	}
	after := snapshot(t, tree)
	if len(after) != len(before) {
		t.Fatalf("the tree had %d files, now %d", len(before), len(after))
	}
	for path, v := range before {
		if after[path] != v {
			t.Fatalf("original %s changed", path)
		}
	}
	// The cache holds the thumbnails and nothing else.
	ents, _ := os.ReadDir(filepath.Join(cacheHome, "dupefs", "thumbs"))
	if len(ents) != len(want) {
		t.Fatalf("the cache holds %d files, want %d", len(ents), len(want))
	}
}

func TestVideoFailsWithoutFFmpegThenThumbsCommandMakesIt(t *testing.T) {
	base := t.TempDir()
	tree, mnt, db := filepath.Join(base, "tree"), filepath.Join(base, "mnt"), filepath.Join(base, "index.db")
	cache := filepath.Join(base, "cache")
	os.Mkdir(mnt, 0o755)
	want, _ := mediaTree(t, tree, true)

	p := startMount(t, db, mnt, "--cache-dir", cache, "--ffmpeg", filepath.Join(base, "no-ffmpeg"), tree)
	waitFor(t, 60*time.Second, "the photos made and the video failed", func() bool {
		b, err := os.ReadFile(filepath.Join(mnt, "status.json"))
		if err != nil {
			t.Fatal(err)
		}
		s := readThumbStatus(t, b)
		return s.Thumbnails.Ready == len(want)-1 && s.Thumbnails.Failed == 2
	})
	p.stop(t)
	if !bytes.Contains(p.stderr.Bytes(), []byte("ffmpeg_missing")) {
		t.Fatalf("the missing ffmpeg was not reported:\n%s", p.stderr)
	}
	r := mustRun(t, db, "status", "--json")
	if s := readThumbStatus(t, []byte(r.stdout)); s.Thumbnails.Failed != 2 {
		t.Fatalf("status: %+v", s)
	}
	// ffmpeg is there for `dupefs thumbs`: the video is retried at once;
	// the broken image waits for its retry_after.
	r = mustRun(t, db, "thumbs", "--cache-dir", cache)
	if s := readThumbStatus(t, []byte(mustRun(t, db, "status", "--json").stdout)); s.Thumbnails.Ready != len(want) || s.Thumbnails.Failed != 1 {
		t.Fatalf("after dupefs thumbs: %+v\n%s", s, r.stderr)
	}
	r = mustRun(t, db, "thumbs", "--cache-dir", cache, "--retry-failed")
	if !bytes.Contains([]byte(r.stderr), []byte("corrupt_image")) {
		t.Fatalf("--retry-failed did not retry the broken image:\n%s", r.stderr)
	}
	if r := dupefs(t, db, "thumbs", "--thumb-read-rate", "fast"); r.code != 3 {
		t.Fatalf("a bad --thumb-read-rate: exit %d, want 3\n%s", r.code, r.stderr)
	}
	if r := dupefs(t, filepath.Join(base, "none.db"), "thumbs"); r.code != 5 {
		t.Fatalf("thumbs without an index: exit %d\n%s", r.code, r.stderr)
	}
}
