package thumb

import (
	"image"
	"image/color"
)

// scaleOverhead is the memory that the steps after a decode may use on top
// of the decoded image: the box-filtered intermediate (at most
// 2*MaxSide x 2*MaxSide RGBA) and its row sums, the float temporaries of the
// CatmullRom pass, the thumbnail and its JPEG encoding.
const scaleOverhead = 8 << 20

// estimateDecodeBytes returns a conservative estimate of the peak memory
// needed to decode an image of the given format and configuration and to
// scale it down. meta is used for JPEG only.
//
// Estimates, per pixel, by format:
//   - jpeg: one byte per pixel of each component plane at its own sampling
//     (4:2:0 YCbCr = 1.5, 4:4:4 = 3, gray = 1), plus 4 for the CMYK output of
//     4-component files, plus 4 per plane pixel for the coefficients kept by
//     progressive decoding; planes are padded to whole MCUs. Without a
//     readable frame header: 15 (4:4:4 progressive).
//   - png, tiff: twice the color model's size (interlace passes; raw strip
//     buffers).
//   - webp: 8, as for lossless (decoded pixels plus a transform's copy);
//     lossy would need less, but DecodeConfig does not tell them apart.
//   - gif, bmp and others: the color model's size.
//
// A 1/16 margin and scaleOverhead are added.
func estimateDecodeBytes(format string, cfg image.Config, meta jpegMeta) int64 {
	px := int64(cfg.Width) * int64(cfg.Height)
	bpp := bytesPerPixel(cfg.ColorModel)
	var est int64
	switch format {
	case "jpeg":
		est = jpegDecodeBytes(cfg.Width, cfg.Height, meta)
	case "png", "tiff":
		est = 2 * bpp * px
	case "webp":
		// The config cannot tell an extended (VP8X) lossless file from a
		// lossy one, so assume lossless.
		est = 8 * px
	default:
		est = bpp * px
	}
	return est + est/16 + scaleOverhead
}

// jpegDecodeBytes estimates the memory image/jpeg needs for a w x h image
// with the frame header in meta; see estimateDecodeBytes.
func jpegDecodeBytes(w, h int, meta jpegMeta) int64 {
	px := int64(w) * int64(h)
	if !meta.sofFound || len(meta.comps) == 0 {
		return 15 * px
	}
	hmax, vmax := 1, 1
	for _, c := range meta.comps {
		hmax, vmax = max(hmax, c.h), max(vmax, c.v)
	}
	pw := roundUp(int64(w), int64(8*hmax))
	ph := roundUp(int64(h), int64(8*vmax))
	var planes int64 // one byte per sample of every component
	for _, c := range meta.comps {
		planes += pw * ph * int64(c.h*c.v) / int64(hmax*vmax)
	}
	est := planes
	if len(meta.comps) == 4 {
		est += 4 * pw * ph // the CMYK image built from YCbCr + K planes
	}
	if meta.progressive {
		est += 4 * planes // one int32 coefficient per sample
	}
	return est
}

// roundUp rounds n up to a multiple of m > 0.
func roundUp(n, m int64) int64 {
	return (n + m - 1) / m * m
}

// bytesPerPixel returns the size of a pixel in the image type that decoders
// return for the color model m; 8 (the largest) if m is unknown.
func bytesPerPixel(m color.Model) int64 {
	if _, ok := m.(color.Palette); ok {
		return 1
	}
	switch m {
	case color.GrayModel, color.AlphaModel:
		return 1
	case color.Gray16Model, color.Alpha16Model:
		return 2
	case color.YCbCrModel:
		return 3
	case color.NYCbCrAModel, color.CMYKModel, color.RGBAModel, color.NRGBAModel:
		return 4
	}
	return 8
}
