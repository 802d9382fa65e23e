package thumb

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestKindOf(t *testing.T) {
	for name, want := range map[string]string{
		"a.jpg": KindImage, "b.JPEG": KindImage, "c.Png": KindImage, "d.gif": KindImage,
		"e.webp": KindImage, "f.bmp": KindImage, "g.tif": KindImage, "h.TIFF": KindImage,
		"v.mp4": KindVideo, "v.MOV": KindVideo, "v.m4v": KindVideo, "v.mkv": KindVideo,
		"v.webm": KindVideo, "v.avi": KindVideo,
		"x.txt": "", "noext": "", "dir.jpg/file": "", "x.jpg.gz": "", ".jpg": KindImage,
	} {
		if got := KindOf(name); got != want {
			t.Errorf("KindOf(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestImageFormats(t *testing.T) {
	src := quadImage(320, 240)
	for _, tc := range []struct{ format, name string }{
		{"jpeg", "a.jpg"}, {"png", "a.png"}, {"gif", "a.gif"}, {"bmp", "a.bmp"}, {"tiff", "a.tiff"},
		{"png", "png-named.jpg"}, {"jpeg", "jpeg-named.PNG"}, // content wins over the extension
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustMake(t, writeFile(t, tc.name, encode(t, tc.format, src)), testOptions())
			if res.Kind != KindImage || res.Width != 256 || res.Height != 192 {
				t.Fatalf("got %s %dx%d, want image 256x192", res.Kind, res.Width, res.Height)
			}
			checkQuad(t, decodeResult(t, res))
		})
	}
}

func TestImageGrayAndPaletted(t *testing.T) {
	g := image.NewGray(image.Rect(0, 0, 300, 300))
	for i := range g.Pix {
		g.Pix[i] = 0x80
	}
	for _, format := range []string{"jpeg", "png", "tiff"} {
		res := mustMake(t, writeFile(t, "g."+format, encode(t, format, g)), testOptions())
		if c := at(decodeResult(t, res), 0.5, 0.5); !near(c, color.RGBA{0x80, 0x80, 0x80, 0xFF}, 6) {
			t.Errorf("%s gray: got %v", format, c)
		}
	}
}

func TestWebPFixtures(t *testing.T) {
	for _, tc := range []struct {
		file        string
		left, right color.RGBA
	}{
		{"lossy.webp", red, red},
		{"lossless.webp", red, blue},
		{"alpha.webp", white, red}, // left half transparent: composited onto white
	} {
		t.Run(tc.file, func(t *testing.T) {
			res := mustMake(t, filepath.Join("testdata", tc.file), testOptions())
			if res.Width != 64 || res.Height != 48 {
				t.Fatalf("got %dx%d, want 64x48", res.Width, res.Height)
			}
			m := decodeResult(t, res)
			if c := at(m, 0.2, 0.5); !near(c, tc.left, 40) {
				t.Errorf("left: got %v, want %v", c, tc.left)
			}
			if c := at(m, 0.8, 0.5); !near(c, tc.right, 40) {
				t.Errorf("right: got %v, want %v", c, tc.right)
			}
		})
	}
}

func TestImageSizes(t *testing.T) {
	for _, tc := range []struct{ w, h, tw, th int }{
		{30, 3000, 3, 256}, {3000, 30, 256, 3}, {1, 1, 1, 1}, {3, 2, 3, 2},
		{256, 256, 256, 256}, {257, 257, 256, 256}, {257, 1, 256, 1}, {1, 5000, 1, 256},
		{600, 599, 256, 256}, {1000, 10, 256, 3}, {512, 384, 256, 192}, {100, 50, 100, 50},
	} {
		src := image.NewNRGBA(image.Rect(0, 0, tc.w, tc.h))
		for i := range src.Pix {
			src.Pix[i] = 0xC0
		}
		res := mustMake(t, writeFile(t, "s.png", encode(t, "png", src)), testOptions())
		if res.Width != tc.tw || res.Height != tc.th {
			t.Errorf("%dx%d: got %dx%d, want %dx%d", tc.w, tc.h, res.Width, res.Height, tc.tw, tc.th)
			continue
		}
		decodeResult(t, res)
	}
}

func TestFitSize(t *testing.T) {
	for _, tc := range []struct{ w, h, tw, th int }{
		{1, 1, 1, 1}, {256, 1, 256, 1}, {1 << 30, 1, 256, 1}, {1, 1 << 30, 1, 256},
		{1000, 1000, 256, 256}, {1000, 500, 256, 128}, {999, 1000, 256, 256}, {301, 1000, 77, 256},
	} {
		if w, h := fitSize(tc.w, tc.h, MaxSide); w != tc.tw || h != tc.th {
			t.Errorf("fitSize(%d,%d) = %d,%d, want %d,%d", tc.w, tc.h, w, h, tc.tw, tc.th)
		}
	}
}

func TestAlphaOnWhite(t *testing.T) {
	clear := image.NewNRGBA(image.Rect(0, 0, 40, 40)) // transparent black
	half := image.NewNRGBA(image.Rect(0, 0, 400, 400))
	for i := 0; i < len(half.Pix); i += 4 {
		copy(half.Pix[i:], []uint8{0xFF, 0, 0, 0x80}) // red at 50%
	}
	pal := image.NewPaletted(image.Rect(0, 0, 40, 40), color.Palette{color.NRGBA{}, red})
	for _, tc := range []struct {
		name string
		data []byte
		want color.RGBA
	}{
		{"clear.png", encode(t, "png", clear), white},
		{"half.png", encode(t, "png", half), color.RGBA{0xFF, 0x7F, 0x7F, 0xFF}},
		{"clear.gif", encode(t, "gif", pal), white},
	} {
		res := mustMake(t, writeFile(t, tc.name, tc.data), testOptions())
		if c := at(decodeResult(t, res), 0.5, 0.5); !near(c, tc.want, 8) {
			t.Errorf("%s: got %v, want %v", tc.name, c, tc.want)
		}
	}
}

func TestBadImages(t *testing.T) {
	jpg := encode(t, "jpeg", quadImage(64, 64))
	var pngBuf bytes.Buffer
	png.Encode(&pngBuf, quadImage(64, 64))
	webp := readTestdata(t, "lossless.webp")
	bmp16 := encode(t, "bmp", quadImage(8, 8))
	bmp16[28] = 16 // bits per pixel: valid BMP, not decoded by x/image/bmp
	for _, tc := range []struct {
		name string
		data []byte
		code string
	}{
		{"empty.jpg", nil, CodeCorrupt},
		{"text.png", []byte("hello, I am not a picture\n"), CodeCorrupt},
		{"garbage.gif", bytes.Repeat([]byte{0x42, 0x00, 0x17}, 1000), CodeCorrupt},
		{"trunc.jpg", jpg[:len(jpg)/2], CodeCorrupt},
		{"header-only.jpg", jpg[:20], CodeCorrupt},
		{"trunc.png", pngBuf.Bytes()[:pngBuf.Len()/2], CodeCorrupt},
		{"trunc.webp", webp[:len(webp)-10], CodeCorrupt},
		{"doc.jpg", []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n"), CodeUnsupported},
		{"movie.png", []byte("\x00\x00\x00\x20ftypisom\x00\x00\x02\x00isomiso2avc1mp41"), CodeUnsupported},
		{"photo.jpg", []byte("\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic"), CodeUnsupported},
		{"notes.txt", []byte("x"), CodeUnsupported}, // unknown extension
		{"lossless.jpg", bytes.Replace(jpg, []byte{0xFF, 0xC0}, []byte{0xFF, 0xC3}, 1), CodeUnsupported},
		{"16bit.bmp", bmp16, CodeUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Make(context.Background(), writeFile(t, tc.name, tc.data), testOptions())
			wantCode(t, err, tc.code)
		})
	}
}

func TestImageIOErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Make(context.Background(), filepath.Join(dir, "missing.jpg"), testOptions())
	wantCode(t, err, CodeIO)
	sub := filepath.Join(dir, "folder.png")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Make(context.Background(), sub, testOptions())
	wantCode(t, err, CodeIO)
}

func TestTooLarge(t *testing.T) {
	// A BMP header claiming 50000x50000 pixels: rejected before decoding.
	data := encode(t, "bmp", image.NewRGBA(image.Rect(0, 0, 4, 4)))
	copy(data[18:22], []byte{0x50, 0xC3, 0, 0}) // width 50000
	copy(data[22:26], []byte{0x50, 0xC3, 0, 0}) // height 50000
	opt := testOptions()
	_, err := Make(context.Background(), writeFile(t, "huge.bmp", data), opt)
	wantCode(t, err, CodeTooLarge)
	if _, peak, _ := opt.Budget.stats(); peak != 0 {
		t.Errorf("budget was used (peak %d) for an image too large to decode", peak)
	}

	small := writeFile(t, "s.png", encode(t, "png", quadImage(100, 100)))
	opt.MaxPixels = 9_999
	_, err = Make(context.Background(), small, opt)
	wantCode(t, err, CodeTooLarge)
	opt.MaxPixels = 10_000
	mustMake(t, small, opt)
}

func TestImageContextEnds(t *testing.T) {
	opt := Options{Budget: NewBudget(1 << 20)}
	if err := opt.Budget.Acquire(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	defer opt.Budget.Release(1)
	path := writeFile(t, "a.png", encode(t, "png", quadImage(200, 200)))
	// The image needs more than the whole budget, so it waits until nothing
	// is held, which does not happen before the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := Make(ctx, path, opt)
	if e := wantCode(t, err, CodeIO); !errors.Is(e, context.DeadlineExceeded) {
		t.Errorf("error does not wrap context.DeadlineExceeded: %v", err)
	}
	if _, _, waiting := opt.Budget.stats(); waiting != 0 {
		t.Errorf("%d waiters left in the budget", waiting)
	}

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = Make(ctx, path, opt)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want an error wrapping context.Canceled", err)
	}
}

func TestNilBudget(t *testing.T) {
	res := mustMake(t, writeFile(t, "a.gif", encode(t, "gif", quadImage(500, 500))), Options{})
	checkQuad(t, decodeResult(t, res))
}
