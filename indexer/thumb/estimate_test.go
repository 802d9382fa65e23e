package thumb

import (
	"bytes"
	"image"
	"image/color"
	"testing"
)

func TestEstimateDecodeBytes(t *testing.T) {
	const mp = 1000 * 1000
	cfg := func(m color.Model) image.Config { return image.Config{ColorModel: m, Width: 1000, Height: 1000} }
	yuv420 := jpegMeta{sofFound: true, comps: []jpegComp{{2, 2}, {1, 1}, {1, 1}}}
	prog444 := jpegMeta{sofFound: true, progressive: true, comps: []jpegComp{{1, 1}, {1, 1}, {1, 1}}}
	cmyk := jpegMeta{sofFound: true, comps: []jpegComp{{1, 1}, {1, 1}, {1, 1}, {1, 1}}}
	gray := jpegMeta{sofFound: true, comps: []jpegComp{{1, 1}}}
	for _, tc := range []struct {
		name   string
		format string
		cfg    image.Config
		meta   jpegMeta
		perPx  float64 // expected bytes per pixel before margin and overhead
	}{
		// 1000 is padded to 1008 for 16x16 MCUs, 1000 for 8x8 ones.
		{"jpeg 4:2:0", "jpeg", cfg(color.YCbCrModel), yuv420, 1.5 * 1008 * 1008 / mp},
		{"jpeg gray", "jpeg", cfg(color.GrayModel), gray, 1},
		{"jpeg progressive 4:4:4", "jpeg", cfg(color.YCbCrModel), prog444, 15},
		{"jpeg cmyk", "jpeg", cfg(color.CMYKModel), cmyk, 8},
		{"jpeg without frame header", "jpeg", cfg(color.YCbCrModel), jpegMeta{}, 15},
		{"png rgba", "png", cfg(color.NRGBAModel), jpegMeta{}, 8},
		{"png 16-bit", "png", cfg(color.RGBA64Model), jpegMeta{}, 16},
		{"tiff gray", "tiff", cfg(color.GrayModel), jpegMeta{}, 2},
		{"gif", "gif", cfg(color.Palette{color.Black}), jpegMeta{}, 1},
		{"bmp", "bmp", cfg(color.RGBAModel), jpegMeta{}, 4},
		{"webp lossy", "webp", cfg(color.YCbCrModel), jpegMeta{}, 8},
		{"unknown model", "other", cfg(nil), jpegMeta{}, 8},
	} {
		base := int64(tc.perPx*mp + 0.5)
		want := base + base/16 + scaleOverhead
		if got := estimateDecodeBytes(tc.format, tc.cfg, tc.meta); got != want {
			t.Errorf("%s: %d, want %d", tc.name, got, want)
		}
	}
}

func TestEstimateFromRealJPEG(t *testing.T) {
	// image/jpeg writes 4:2:0 for color and one component for gray.
	m := readJPEGMeta(bytes.NewReader(encode(t, "jpeg", image.NewGray(image.Rect(0, 0, 8, 8)))))
	if !m.sofFound || len(m.comps) != 1 {
		t.Errorf("gray JPEG: %+v", m)
	}
}
