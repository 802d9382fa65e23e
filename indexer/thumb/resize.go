package thumb

import (
	"image"
	"image/color"
)

// fitSize returns the size of a w x h image scaled to fit limit x limit with
// its aspect ratio kept: never larger than w x h, never 0 in either
// dimension. w and h must be positive.
func fitSize(w, h, limit int) (int, int) {
	if w <= limit && h <= limit {
		return w, h
	}
	if w >= h {
		return limit, max(1, int((int64(h)*int64(limit)+int64(w)/2)/int64(w)))
	}
	return max(1, int((int64(w)*int64(limit)+int64(h)/2)/int64(h))), limit
}

// rowAdder adds the premultiplied 8-bit RGBA components of source pixels
// x0..x1-1 of row y (in bounds coordinates) to sum[0..3].
type rowAdder func(y, x0, x1 int, sum []uint64)

// boxReduce shrinks src to exactly dw x dh by averaging (box filter): every
// source pixel falls into exactly one destination cell, and each cell is the
// mean of its pixels, in premultiplied RGBA. Cells differ by at most one
// source pixel in width and height. dw and dh must be in 1..the source size.
// Its memory is O(dw*dh), whatever the source size.
//
// A YCbCr image (what JPEG decodes to) is averaged in YCbCr, the space it
// was encoded in, and each cell converted to RGB once: that is one
// conversion per cell instead of one per pixel, and the same as averaging
// in RGB except where pixels lie outside the RGB gamut.
func boxReduce(src image.Image, dw, dh int) *image.RGBA {
	b := src.Bounds()
	sw, sh := b.Dx(), b.Dy()
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	add, ycc := rowAdderFor(src)
	sums := make([]uint64, 4*dw)

	// Cell c along an axis of n source pixels and m cells covers source
	// indices [start(c), start(c+1)) with start(c) = ceil(c*n/m).
	start := func(c, n, m int) int { return int((int64(c)*int64(n) + int64(m) - 1) / int64(m)) }
	xs := make([]int, dw+1)
	for c := range xs {
		xs[c] = b.Min.X + start(c, sw, dw)
	}
	for cy := range dh {
		y0, y1 := start(cy, sh, dh), start(cy+1, sh, dh)
		for y := y0; y < y1; y++ {
			for cx := range dw {
				add(b.Min.Y+y, xs[cx], xs[cx+1], sums[4*cx:4*cx+4:4*cx+4])
			}
		}
		row := dst.Pix[cy*dst.Stride:]
		for cx := range dw {
			n := uint64(xs[cx+1]-xs[cx]) * uint64(y1-y0)
			for i := range 4 {
				row[4*cx+i] = uint8((sums[4*cx+i] + n/2) / n)
			}
			if ycc {
				p := row[4*cx : 4*cx+3 : 4*cx+3]
				p[0], p[1], p[2] = color.YCbCrToRGB(p[0], p[1], p[2])
			}
		}
		clear(sums)
	}
	return dst
}

// rowAdderFor returns a fast rowAdder for the image types that decoders
// commonly return, and a generic one (through At) for the others. With ycc
// the adder sums Y, Cb, Cr and alpha instead of RGBA.
func rowAdderFor(src image.Image) (add rowAdder, ycc bool) {
	switch m := src.(type) {
	case *image.YCbCr:
		if m.Rect.Min.X < 0 { // x>>hshift below would differ from COffset's x/2
			return func(y, x0, x1 int, sum []uint64) {
				for x := x0; x < x1; x++ {
					c := m.YCbCrAt(x, y)
					sum[0], sum[1], sum[2], sum[3] = sum[0]+uint64(c.Y), sum[1]+uint64(c.Cb), sum[2]+uint64(c.Cr), sum[3]+0xFF
				}
			}, true
		}
		hshift := 0 // log2 of the horizontal chroma subsampling
		switch m.SubsampleRatio {
		case image.YCbCrSubsampleRatio422, image.YCbCrSubsampleRatio420:
			hshift = 1
		case image.YCbCrSubsampleRatio411, image.YCbCrSubsampleRatio410:
			hshift = 2
		}
		return func(y, x0, x1 int, sum []uint64) {
			var ys, cbs, crs uint64
			for _, yy := range m.Y[m.YOffset(x0, y):][:x1-x0] {
				ys += uint64(yy)
			}
			// Each chroma sample counts for the luma pixels it covers.
			cbase := m.COffset(x0, y) - x0>>hshift
			for x := x0; x < x1; {
				c := x >> hshift
				next := min(x1, (c+1)<<hshift)
				w := uint64(next - x)
				cbs += w * uint64(m.Cb[cbase+c])
				crs += w * uint64(m.Cr[cbase+c])
				x = next
			}
			sum[0], sum[1], sum[2], sum[3] = sum[0]+ys, sum[1]+cbs, sum[2]+crs, sum[3]+0xFF*uint64(x1-x0)
		}, true
	case *image.RGBA:
		return func(y, x0, x1 int, sum []uint64) {
			var s [4]uint64
			for i, v := range m.Pix[m.PixOffset(x0, y):m.PixOffset(x1, y)] {
				s[i&3] += uint64(v)
			}
			sum[0], sum[1], sum[2], sum[3] = sum[0]+s[0], sum[1]+s[1], sum[2]+s[2], sum[3]+s[3]
		}, false
	case *image.NRGBA:
		return func(y, x0, x1 int, sum []uint64) {
			var r, g, b, a uint64
			p := m.Pix[m.PixOffset(x0, y):m.PixOffset(x1, y)]
			for i := 0; i+3 < len(p); i += 4 {
				pa := uint64(p[i+3])
				r += (uint64(p[i+0])*pa + 127) / 255
				g += (uint64(p[i+1])*pa + 127) / 255
				b += (uint64(p[i+2])*pa + 127) / 255
				a += pa
			}
			sum[0], sum[1], sum[2], sum[3] = sum[0]+r, sum[1]+g, sum[2]+b, sum[3]+a
		}, false
	case *image.Gray:
		return func(y, x0, x1 int, sum []uint64) {
			var v uint64
			for _, p := range m.Pix[m.PixOffset(x0, y):m.PixOffset(x1, y)] {
				v += uint64(p)
			}
			sum[0], sum[1], sum[2], sum[3] = sum[0]+v, sum[1]+v, sum[2]+v, sum[3]+0xFF*uint64(x1-x0)
		}, false
	case *image.Paletted:
		var lut [256][4]uint64 // indices beyond the palette read as transparent black
		for i, c := range m.Palette[:min(len(m.Palette), 256)] {
			r, g, b, a := c.RGBA()
			lut[i] = [4]uint64{uint64(r >> 8), uint64(g >> 8), uint64(b >> 8), uint64(a >> 8)}
		}
		return func(y, x0, x1 int, sum []uint64) {
			var s [4]uint64
			for _, p := range m.Pix[m.PixOffset(x0, y):m.PixOffset(x1, y)] {
				c := &lut[p]
				s[0], s[1], s[2], s[3] = s[0]+c[0], s[1]+c[1], s[2]+c[2], s[3]+c[3]
			}
			sum[0], sum[1], sum[2], sum[3] = sum[0]+s[0], sum[1]+s[1], sum[2]+s[2], sum[3]+s[3]
		}, false
	}
	return func(y, x0, x1 int, sum []uint64) {
		for x := x0; x < x1; x++ {
			r, g, b, a := src.At(x, y).RGBA()
			sum[0], sum[1], sum[2], sum[3] = sum[0]+uint64(r>>8), sum[1]+uint64(g>>8), sum[2]+uint64(b>>8), sum[3]+uint64(a>>8)
		}
	}, false
}
