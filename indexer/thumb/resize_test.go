package thumb

import (
	"context"
	"errors"
	"image"
	"image/color"
	"math/rand/v2"
	"testing"
)

// opaque hides an image's concrete type, so that boxReduce takes its
// generic (At-based) path: the reference for the fast paths.
type opaque struct{ image.Image }

// randomImages returns images of every type with a fast path, filled with
// pseudo-random pixels, some with bounds not at the origin.
func randomImages(w, h int) map[string]image.Image {
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(pix []uint8) {
		for i := range pix {
			pix[i] = uint8(rng.UintN(256))
		}
	}
	r := image.Rect(0, 0, w, h)
	out := map[string]image.Image{}
	rgba := image.NewRGBA(r)
	for i := 0; i < len(rgba.Pix); i += 4 { // valid premultiplied values
		a := uint8(rng.UintN(256))
		rgba.Pix[i+3] = a
		for c := range 3 {
			rgba.Pix[i+c] = uint8(rng.UintN(uint(a) + 1))
		}
	}
	out["rgba"] = rgba
	nrgba := image.NewNRGBA(r)
	fill(nrgba.Pix)
	out["nrgba"] = nrgba
	gray := image.NewGray(r)
	fill(gray.Pix)
	out["gray"] = gray
	pal := image.NewPaletted(r, color.Palette{red, blue, color.NRGBA{0, 0xFF, 0, 0x40}, color.Transparent})
	for i := range pal.Pix {
		pal.Pix[i] = uint8(rng.UintN(4))
	}
	out["paletted"] = pal
	for name, ratio := range map[string]image.YCbCrSubsampleRatio{
		"444": image.YCbCrSubsampleRatio444, "422": image.YCbCrSubsampleRatio422,
		"420": image.YCbCrSubsampleRatio420, "440": image.YCbCrSubsampleRatio440,
		"411": image.YCbCrSubsampleRatio411, "410": image.YCbCrSubsampleRatio410,
	} {
		m := image.NewYCbCr(image.Rect(-3, -5, w+4, h+6), ratio)
		fill(m.Y)
		fill(m.Cb)
		fill(m.Cr)
		out["ycbcr"+name] = m
		out["ycbcr"+name+"-sub"] = m.SubImage(image.Rect(3, 1, w+3, h+1))
	}
	cmyk := image.NewCMYK(r)
	fill(cmyk.Pix)
	out["cmyk"] = cmyk
	return out
}

// yccReference reduces a YCbCr image as boxReduce documents it: the mean
// of Y, Cb and Cr over each cell (from YCbCrAt), converted to RGB once.
func yccReference(m interface {
	image.Image
	YCbCrAt(x, y int) color.YCbCr
}, dw, dh int) *image.RGBA {
	b := m.Bounds()
	start := func(c, n, m int) int { return (c*n + m - 1) / m }
	out := image.NewRGBA(image.Rect(0, 0, dw, dh))
	for cy := range dh {
		for cx := range dw {
			var s [3]int
			n := 0
			for y := b.Min.Y + start(cy, b.Dy(), dh); y < b.Min.Y+start(cy+1, b.Dy(), dh); y++ {
				for x := b.Min.X + start(cx, b.Dx(), dw); x < b.Min.X+start(cx+1, b.Dx(), dw); x++ {
					c := m.YCbCrAt(x, y)
					s[0], s[1], s[2], n = s[0]+int(c.Y), s[1]+int(c.Cb), s[2]+int(c.Cr), n+1
				}
			}
			r, g, bl := color.YCbCrToRGB(uint8((s[0]+n/2)/n), uint8((s[1]+n/2)/n), uint8((s[2]+n/2)/n))
			out.SetRGBA(cx, cy, color.RGBA{r, g, bl, 0xFF})
		}
	}
	return out
}

func TestBoxReduceFastPaths(t *testing.T) {
	for name, m := range randomImages(97, 61) {
		for _, size := range [][2]int{{97, 61}, {40, 30}, {1, 1}, {13, 61}} {
			got := boxReduce(m, size[0], size[1])
			want := boxReduce(opaque{m}, size[0], size[1])
			if y, ok := m.(interface {
				image.Image
				YCbCrAt(x, y int) color.YCbCr
			}); ok {
				want = yccReference(y, size[0], size[1])
			}
			for i := range got.Pix {
				// The generic path goes through 16-bit colors: allow 1 off.
				if d := abs(int(got.Pix[i]) - int(want.Pix[i])); d > 1 {
					t.Fatalf("%s to %v: byte %d is %d, reference %d", name, size, i, got.Pix[i], want.Pix[i])
				}
			}
		}
	}
}

func TestBoxReduceAverages(t *testing.T) {
	// 3x1 black, white, black: one cell averages to 85.
	m := image.NewGray(image.Rect(0, 0, 3, 1))
	m.Pix[1] = 0xFF
	if got := boxReduce(m, 1, 1).Pix; got[0] != 85 || got[3] != 0xFF {
		t.Errorf("got %v, want gray 85", got)
	}
	// 5 columns into 2 cells of 3 and 2 columns (cells start at ceil(c*5/2)).
	m = image.NewGray(image.Rect(0, 0, 5, 1))
	copy(m.Pix, []uint8{30, 30, 30, 90, 90})
	if got := boxReduce(m, 2, 1).Pix; got[0] != 30 || got[4] != 90 {
		t.Errorf("got %v, want cells 30 and 90", got)
	}
}

func TestOrientUnit(t *testing.T) {
	// 3x2 image of distinct pixels; each orientation against a hand-written
	// expectation (rows of pixel ids, 0 = stored top-left).
	m := image.NewRGBA(image.Rect(0, 0, 3, 2))
	for i := range 6 {
		m.Pix[4*i] = uint8(i)
	}
	want := map[int][][]uint8{
		1: {{0, 1, 2}, {3, 4, 5}},
		2: {{2, 1, 0}, {5, 4, 3}},
		3: {{5, 4, 3}, {2, 1, 0}},
		4: {{3, 4, 5}, {0, 1, 2}},
		5: {{0, 3}, {1, 4}, {2, 5}},
		6: {{3, 0}, {4, 1}, {5, 2}},
		7: {{5, 2}, {4, 1}, {3, 0}},
		8: {{2, 5}, {1, 4}, {0, 3}},
	}
	for o, rows := range want {
		out := orient(m, o)
		if out.Rect.Dx() != len(rows[0]) || out.Rect.Dy() != len(rows) {
			t.Errorf("orientation %d: size %v", o, out.Rect)
			continue
		}
		for y, row := range rows {
			for x, id := range row {
				if got := out.Pix[out.PixOffset(x, y)]; got != id {
					t.Errorf("orientation %d at (%d,%d): pixel %d, want %d", o, x, y, got, id)
				}
			}
		}
	}
}

// TestMutatedFilesNeverPanic truncates and corrupts valid files of every
// format and checks that Make only ever succeeds or fails with a decode
// error, never panics.
func TestMutatedFilesNeverPanic(t *testing.T) {
	src := quadImage(40, 30)
	files := map[string][]byte{}
	for _, f := range []string{"jpeg", "png", "gif", "bmp", "tiff"} {
		files[f] = encode(t, f, src)
	}
	for _, f := range []string{"lossy", "lossless", "alpha"} {
		files[f+".webp"] = readTestdata(t, f+".webp")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	opt := Options{Budget: NewBudget(1 << 30), MaxPixels: 1 << 22} // bounds hostile sizes
	dir := t.TempDir()
	for name, data := range files {
		for i := range 60 {
			mut := append([]byte{}, data...)
			if i < 20 {
				mut = mut[:rng.IntN(len(mut))]
			} else {
				for range 1 + rng.IntN(8) {
					mut[rng.IntN(len(mut))] = uint8(rng.UintN(256))
				}
			}
			path := dir + "/m.img.png"
			writeBytes(t, path, mut)
			_, err := Make(context.Background(), path, opt)
			var e *Error
			if err != nil && (!errors.As(err, &e) || (e.Code != CodeCorrupt && e.Code != CodeTooLarge && e.Code != CodeUnsupported)) {
				t.Errorf("%s mutation %d: unexpected error %v", name, i, err)
			}
		}
	}
}

func TestThumbnailRecovers(t *testing.T) {
	// image.Paletted's At panics on an index beyond the palette.
	m := image.NewPaletted(image.Rect(0, 0, 4, 4), color.Palette{red})
	m.Pix[5] = 9
	if _, err := thumbnail(opaque{m}, 1, KindImage); err == nil {
		t.Fatal("no error from a panicking image")
	}
	if _, err := thumbnail(m, 1, KindImage); err != nil { // the fast path copes
		t.Fatal(err)
	}
}
