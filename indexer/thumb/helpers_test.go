package thumb

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
)

var (
	red   = color.RGBA{0xFF, 0, 0, 0xFF}
	white = color.RGBA{0xFF, 0xFF, 0xFF, 0xFF}
	blue  = color.RGBA{0, 0, 0xFF, 0xFF}
)

// quadImage returns a w x h white image whose top-left quadrant is red.
func quadImage(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			if x < w/2 && y < h/2 {
				m.SetRGBA(x, y, red)
			} else {
				m.SetRGBA(x, y, white)
			}
		}
	}
	return m
}

// testOptions returns Options with a generous budget.
func testOptions() Options {
	return Options{Budget: NewBudget(1 << 30)}
}

// writeFile writes data to name in a new temporary directory of t.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	writeBytes(t, p, data)
	return p
}

// encode encodes m in the named format ("jpeg", "png", "gif", "bmp", "tiff").
func encode(t testing.TB, format string, m image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	switch format {
	case "jpeg":
		err = jpeg.Encode(&buf, m, &jpeg.Options{Quality: 95})
	case "png":
		err = png.Encode(&buf, m)
	case "gif":
		err = gif.Encode(&buf, m, nil)
	case "bmp":
		err = bmp.Encode(&buf, m)
	case "tiff":
		err = tiff.Encode(&buf, m, &tiff.Options{Compression: tiff.Deflate})
	default:
		t.Fatalf("unknown format %q", format)
	}
	if err != nil {
		t.Fatalf("encode %s: %v", format, err)
	}
	return buf.Bytes()
}

// mustMake runs Make and fails the test on error.
func mustMake(t *testing.T, path string, opt Options) Result {
	t.Helper()
	res, err := Make(context.Background(), path, opt)
	if err != nil {
		t.Fatalf("Make(%s): %v", filepath.Base(path), err)
	}
	return res
}

// decodeResult checks that res holds a baseline JPEG of the size it claims,
// within MaxSide, and returns it decoded.
func decodeResult(t *testing.T, res Result) image.Image {
	t.Helper()
	if res.Width < 1 || res.Height < 1 || res.Width > MaxSide || res.Height > MaxSide {
		t.Fatalf("bad thumbnail size %dx%d", res.Width, res.Height)
	}
	if !bytes.Contains(res.JPEG, []byte{0xFF, 0xC0}) || bytes.Contains(res.JPEG, []byte{0xFF, 0xC2}) {
		t.Errorf("thumbnail is not a baseline JPEG")
	}
	m, format, err := image.Decode(bytes.NewReader(res.JPEG))
	if err != nil || format != "jpeg" {
		t.Fatalf("thumbnail does not decode as JPEG: %v (%s)", err, format)
	}
	if b := m.Bounds(); b.Dx() != res.Width || b.Dy() != res.Height {
		t.Fatalf("JPEG is %dx%d, Result says %dx%d", b.Dx(), b.Dy(), res.Width, res.Height)
	}
	return m
}

// near reports whether c is within tol of want in each of R, G and B.
func near(c color.Color, want color.RGBA, tol int) bool {
	r, g, b, _ := c.RGBA()
	d := func(v uint32, w uint8) bool { return abs(int(v>>8)-int(w)) <= tol }
	return d(r, want.R) && d(g, want.G) && d(b, want.B)
}

func abs(v int) int { return max(v, -v) }

// at returns the color at fractions (fx, fy) of m's size.
func at(m image.Image, fx, fy float64) color.Color {
	b := m.Bounds()
	return m.At(b.Min.X+int(fx*float64(b.Dx())), b.Min.Y+int(fy*float64(b.Dy())))
}

// checkQuad checks that m is red in its top-left quadrant and white in the
// others (sampled at the quadrant centres).
func checkQuad(t *testing.T, m image.Image) {
	t.Helper()
	for _, q := range []struct {
		fx, fy float64
		want   color.RGBA
	}{{0.25, 0.25, red}, {0.75, 0.25, white}, {0.25, 0.75, white}, {0.75, 0.75, white}} {
		if c := at(m, q.fx, q.fy); !near(c, q.want, 40) {
			t.Errorf("at (%.2f,%.2f): got %v, want %v", q.fx, q.fy, c, q.want)
		}
	}
}

// wantCode checks that err is an *Error with the given code.
func wantCode(t *testing.T, err error, code string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v (%T), want *Error %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("got code %s (%v), want %s", e.Code, e, code)
	}
	if !strings.HasPrefix(e.Error(), code+": ") || e.Message == "" {
		t.Errorf("badly formed error %q", e.Error())
	}
	return e
}

// requireFFmpeg returns the path of ffmpeg or skips the test.
func requireFFmpeg(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("ffmpeg not found in PATH (install the Debian package ffmpeg to run the video tests)")
	}
	return p
}

// runFFmpeg runs ffmpeg with args to generate a test file.
func runFFmpeg(t *testing.T, ffmpeg string, args ...string) {
	t.Helper()
	all := append([]string{"-nostdin", "-hide_banner", "-loglevel", "error", "-y"}, args...)
	out, err := exec.Command(ffmpeg, all...).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, out)
	}
}

// readTestdata returns the contents of testdata/name.
func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeBytes writes data to path.
func writeBytes(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
