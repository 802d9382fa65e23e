package thumb

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"

	"golang.org/x/image/draw"
)

// thumbnail scales src to fit MaxSide x MaxSide, composites it onto white,
// turns it upright by the EXIF orientation (1..8) and encodes it as JPEG.
// A panic (say, from the At method of an inconsistent image) is returned
// as an error.
func thumbnail(src image.Image, orientation int, kind string) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = Result{}, fmt.Errorf("thumbnail panic: %v", r)
		}
	}()
	sb := src.Bounds()
	sw, sh := sb.Dx(), sb.Dy()
	if sw < 1 || sh < 1 {
		return Result{}, fmt.Errorf("image has no pixels (%dx%d)", sw, sh)
	}
	fw, fh := fitSize(sw, sh, MaxSide)

	// A box filter first brings big images down to at most twice the final
	// size cheaply (and in bounded memory); CatmullRom then does the last,
	// at most 2:1, step well.
	small := boxReduce(src, min(sw, 2*fw), min(sh, 2*fh))
	if small.Rect.Dx() != fw || small.Rect.Dy() != fh {
		dst := image.NewRGBA(image.Rect(0, 0, fw, fh))
		draw.CatmullRom.Scale(dst, dst.Rect, small, small.Rect, draw.Src, nil)
		small = dst
	}
	onWhite(small)
	out := orient(small, orientation)

	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, out, &jpeg.Options{Quality: jpegQuality}); err != nil {
		return Result{}, fmt.Errorf("encode thumbnail: %w", err)
	}
	return Result{JPEG: buf.Bytes(), Width: out.Rect.Dx(), Height: out.Rect.Dy(), Kind: kind}, nil
}

// onWhite composites the premultiplied image m onto opaque white, in place.
// It saturates, as a filter's overshoot can leave a channel above alpha.
func onWhite(m *image.RGBA) {
	for i := 0; i+3 < len(m.Pix); i += 4 {
		t := 0xFF - uint16(m.Pix[i+3])
		for c := i; c < i+3; c++ {
			m.Pix[c] = uint8(min(0xFF, uint16(m.Pix[c])+t))
		}
		m.Pix[i+3] = 0xFF
	}
}

// orient returns m transformed so that an image stored with the given EXIF
// orientation displays upright. Orientations 5..8 swap width and height;
// values outside 2..8 return m itself.
func orient(m *image.RGBA, orientation int) *image.RGBA {
	if orientation < 2 || orientation > 8 {
		return m
	}
	w, h := m.Rect.Dx(), m.Rect.Dy()
	ow, oh := w, h
	if orientation >= 5 {
		ow, oh = h, w
	}
	out := image.NewRGBA(image.Rect(0, 0, ow, oh))
	for dy := range oh {
		for dx := range ow {
			// (sx, sy) is the stored pixel displayed at (dx, dy).
			var sx, sy int
			switch orientation {
			case 2: // mirrored horizontally
				sx, sy = w-1-dx, dy
			case 3: // rotated 180°
				sx, sy = w-1-dx, h-1-dy
			case 4: // mirrored vertically
				sx, sy = dx, h-1-dy
			case 5: // transposed
				sx, sy = dy, dx
			case 6: // needs 90° clockwise
				sx, sy = dy, h-1-dx
			case 7: // transversed
				sx, sy = w-1-dy, h-1-dx
			case 8: // needs 90° counter-clockwise
				sx, sy = w-1-dy, dx
			}
			si, di := m.PixOffset(m.Rect.Min.X+sx, m.Rect.Min.Y+sy), out.PixOffset(dx, dy)
			copy(out.Pix[di:di+4], m.Pix[si:si+4])
		}
	}
	return out
}
