package indexer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"

	"github.com/dupefs/dupefs/store"
)

// Helpers of the thumbnail tests: test pictures, cache fingerprints and
// checks of a made thumbnail.

// gradient is a w x h test picture.
func gradient(w, h int) image.Image {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.SetRGBA(x, y, color.RGBA{uint8(x * 255 / max(w-1, 1)), uint8(y * 255 / max(h-1, 1)), 90, 255})
		}
	}
	return m
}

// writeImage encodes a w x h picture at path, in the format its extension
// names (webp: a fixture of package thumb, w and h ignored).
func writeImage(tb testing.TB, path string, w, h int) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	var err error
	m := gradient(w, h)
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jpg", ".jpeg":
		err = jpeg.Encode(&buf, m, &jpeg.Options{Quality: 80})
	case ".png":
		err = png.Encode(&buf, m)
	case ".gif":
		err = gif.Encode(&buf, m, nil)
	case ".bmp":
		err = bmp.Encode(&buf, m)
	case ".tif", ".tiff":
		err = tiff.Encode(&buf, m, nil)
	case ".webp":
		var b []byte
		b, err = os.ReadFile("thumb/testdata/lossy.webp")
		buf.Write(b)
	default:
		tb.Fatalf("no encoder for %s", path)
	}
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// copyFile copies src to dst, creating dst's folder.
func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(dst), 0o755)
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// fingerprint maps every file under dir to its content hash, size and
// mtime, to prove originals are left as they were.
func fingerprint(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		h := sha256.Sum256(b)
		out[p] = string(h[:]) + fi.ModTime().String()
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func sameFingerprint(tb testing.TB, before, after map[string]string) {
	tb.Helper()
	if len(before) != len(after) {
		tb.Fatalf("originals: %d files before, %d after", len(before), len(after))
	}
	for p, v := range before {
		if after[p] != v {
			tb.Fatalf("original %s changed", p)
		}
	}
}

// thumbEnv is an env with a thumbnail cache.
func (e *env) thumbConfig() ThumbConfig {
	return ThumbConfig{
		Dir: filepath.Join(filepath.Dir(e.dir), "cache"), Workers: 2, LeaseTTL: 5 * time.Second,
		Warn: e.warned,
	}
}

func (e *env) drain(cfg ThumbConfig) *Thumbnailer {
	e.tb.Helper()
	th, err := NewThumbnailer(ThumbIndexOf(e.db), cfg)
	if err != nil {
		e.tb.Fatal(err)
	}
	if err := th.Drain(context.Background()); err != nil {
		e.tb.Fatal(err)
	}
	return th
}

// thumbOf returns the thumbnail row of the group holding the file at rel.
func (e *env) thumbOf(rel string) (store.Thumb, bool) {
	e.tb.Helper()
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join(e.dir, rel))
	if err != nil {
		e.tb.Fatal(err)
	}
	h := sha256.Sum256(b)
	var after int64
	for {
		ts, err := e.db.Thumbs().ThumbsPage(ctx, after, 100)
		if err != nil {
			e.tb.Fatal(err)
		}
		for _, t := range ts {
			if t.Key == "sha256:"+hexString(h[:]) {
				return t, true
			}
			after = t.ID
		}
		if len(ts) < 100 {
			return store.Thumb{}, false
		}
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// checkThumb decodes the cache file of a ready row and checks it against
// the row and the source's shape.
func checkThumb(tb testing.TB, dir string, row store.Thumb, srcW, srcH int) {
	tb.Helper()
	if row.Status != store.ThumbReady {
		tb.Fatalf("%s: status %s (%s: %s), want ready", row.Key, row.Status, row.ErrorCode, row.ErrorMessage)
	}
	b, err := os.ReadFile(filepath.Join(dir, row.Key+".jpg"))
	if err != nil {
		tb.Fatal(err)
	}
	if int64(len(b)) != row.BytesSize {
		tb.Fatalf("%s: file of %d bytes, row says %d", row.Key, len(b), row.BytesSize)
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil || format != "jpeg" {
		tb.Fatalf("%s: not a JPEG: %v %s", row.Key, err, format)
	}
	if cfg.Width != row.Width || cfg.Height != row.Height {
		tb.Fatalf("%s: %dx%d, row says %dx%d", row.Key, cfg.Width, cfg.Height, row.Width, row.Height)
	}
	if max(cfg.Width, cfg.Height) > 256 || cfg.Width < 1 || cfg.Height < 1 {
		tb.Fatalf("%s: %dx%d does not fit 256x256", row.Key, cfg.Width, cfg.Height)
	}
	if srcW > 0 {
		want := float64(srcW) / float64(srcH)
		got := float64(cfg.Width) / float64(cfg.Height)
		if got/want > 1.1 || want/got > 1.1 {
			tb.Fatalf("%s: aspect %.3f, source %.3f", row.Key, got, want)
		}
	}
}
