package thumb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

// tiffIFD0 returns a TIFF structure in the given byte order ("II" or "MM")
// whose IFD0 has a Make tag and an orientation tag of the given type and
// value.
func tiffIFD0(order string, typ uint16, value uint32) []byte {
	var bo binary.AppendByteOrder = binary.LittleEndian
	if order == "MM" {
		bo = binary.BigEndian
	}
	b := []byte(order)
	b = bo.AppendUint16(b, 42)
	b = bo.AppendUint32(b, 8)
	b = bo.AppendUint16(b, 2) // entries
	// 0x010F Make, ASCII, 4 bytes inline.
	b = bo.AppendUint16(b, 0x010F)
	b = bo.AppendUint16(b, 2)
	b = bo.AppendUint32(b, 4)
	b = append(b, "Cam\x00"...)
	// 0x0112 Orientation.
	b = bo.AppendUint16(b, 0x0112)
	b = bo.AppendUint16(b, typ)
	b = bo.AppendUint32(b, 1)
	if typ == 3 { // SHORT: left-justified in the value field
		b = bo.AppendUint16(b, uint16(value))
		b = append(b, 0, 0)
	} else {
		b = bo.AppendUint32(b, value)
	}
	return bo.AppendUint32(b, 0) // no next IFD
}

// app1 returns a JPEG APP1 segment with the given payload.
func app1(payload []byte) []byte {
	seg := []byte{0xFF, 0xE1}
	seg = binary.BigEndian.AppendUint16(seg, uint16(len(payload)+2))
	return append(seg, payload...)
}

// withSegments returns jpg with segs inserted right after its SOI marker.
func withSegments(jpg []byte, segs ...[]byte) []byte {
	out := append([]byte{}, jpg[:2]...)
	for _, s := range segs {
		out = append(out, s...)
	}
	return append(out, jpg[2:]...)
}

func exifSeg(tiff []byte) []byte {
	return app1(append([]byte("Exif\x00\x00"), tiff...))
}

func TestEXIFOrientation(t *testing.T) {
	// Stored 400x200 with a red top-left quadrant; where the red ends up
	// once displayed upright, per the EXIF specification.
	jpg := encode(t, "jpeg", quadImage(400, 200))
	type corner struct{ fx, fy float64 }
	tl, tr, br, bl := corner{0.25, 0.25}, corner{0.75, 0.25}, corner{0.75, 0.75}, corner{0.25, 0.75}
	want := map[uint32]struct {
		w, h int
		red  corner
	}{
		1: {256, 128, tl}, 2: {256, 128, tr}, 3: {256, 128, br}, 4: {256, 128, bl},
		5: {128, 256, tl}, 6: {128, 256, tr}, 7: {128, 256, br}, 8: {128, 256, bl},
	}
	for o := uint32(1); o <= 8; o++ {
		for _, order := range []string{"II", "MM"} {
			t.Run(fmt.Sprintf("%d-%s", o, order), func(t *testing.T) {
				// An XMP APP1 segment first: the EXIF one must still be found.
				xmp := app1([]byte("http://ns.adobe.com/xap/1.0/\x00<x:xmpmeta/>"))
				data := withSegments(jpg, xmp, exifSeg(tiffIFD0(order, 3, o)))
				res := mustMake(t, writeFile(t, "o.jpg", data), testOptions())
				w := want[o]
				if res.Width != w.w || res.Height != w.h {
					t.Fatalf("got %dx%d, want %dx%d", res.Width, res.Height, w.w, w.h)
				}
				m := decodeResult(t, res)
				for _, c := range []corner{tl, tr, br, bl} {
					isRed := near(at(m, c.fx, c.fy), red, 40)
					if isRed != (c == w.red) {
						t.Errorf("at %v: red=%v, want red only at %v", c, isRed, w.red)
					}
				}
			})
		}
	}
}

// garbageTIFF is EXIF payloads that must all read as orientation 1.
var garbageTIFF = map[string][]byte{
	"empty":          {},
	"short":          []byte("II*"),
	"bad order":      []byte("XX*\x00\x08\x00\x00\x00\x00\x00"),
	"bad magic":      []byte("II\x2b\x00\x08\x00\x00\x00\x00\x00"),
	"ifd past end":   []byte("II*\x00\xff\xff\xff\xff"),
	"ifd in header":  []byte("II*\x00\x04\x00\x00\x00\x00\x00"),
	"count too big":  append([]byte("II*\x00\x08\x00\x00\x00\xff\xff"), tiffIFD0("II", 3, 6)[10:30]...),
	"value 0":        tiffIFD0("II", 3, 0),
	"value 9":        tiffIFD0("MM", 3, 9),
	"ascii type":     tiffIFD0("II", 2, 6),
	"truncated ifd":  tiffIFD0("II", 3, 6)[:30],
	"huge long":      tiffIFD0("MM", 4, 0xFFFFFFFF),
	"only header ok": []byte("MM\x00*\x00\x00\x00\x08"),
}

func TestEXIFParser(t *testing.T) {
	for name, b := range garbageTIFF {
		if o := exifOrientation(b); o != 1 {
			t.Errorf("%s: orientation %d, want 1", name, o)
		}
	}
	for _, tc := range []struct {
		tiff []byte
		want int
	}{
		{tiffIFD0("II", 3, 6), 6}, {tiffIFD0("MM", 3, 8), 8}, {tiffIFD0("II", 4, 3), 3}, {tiffIFD0("MM", 4, 5), 5},
	} {
		if o := exifOrientation(tc.tiff); o != tc.want {
			t.Errorf("orientation %d, want %d", o, tc.want)
		}
	}
}

func TestEXIFGarbageIgnored(t *testing.T) {
	jpg := encode(t, "jpeg", quadImage(400, 200))
	segs := map[string][]byte{
		"app1 past eof": {0xFF, 0xE1, 0xFF, 0xFF, 'E', 'x', 'i', 'f', 0, 0, 'I', 'I'},
		"app1 length 0": {0xFF, 0xE1, 0x00, 0x00},
		"not exif":      app1([]byte("Exif\x00")),
	}
	for name, tiff := range garbageTIFF {
		segs[name] = exifSeg(tiff)
	}
	for name, seg := range segs {
		t.Run(name, func(t *testing.T) {
			data := withSegments(jpg, seg)
			if m := readJPEGMeta(bytes.NewReader(data)); m.orientation != 1 {
				t.Fatalf("orientation %d, want 1", m.orientation)
			}
			res, err := Make(t.Context(), writeFile(t, "g.jpg", data), testOptions())
			if err != nil { // a broken segment may break the JPEG itself
				wantCode(t, err, CodeCorrupt)
				return
			}
			if res.Width != 256 || res.Height != 128 {
				t.Fatalf("got %dx%d, want 256x128", res.Width, res.Height)
			}
			checkQuad(t, decodeResult(t, res))
		})
	}
}

func TestJPEGMetaFrame(t *testing.T) {
	m := readJPEGMeta(bytes.NewReader(encode(t, "jpeg", quadImage(64, 64))))
	if !m.sofFound || m.progressive || len(m.comps) != 3 || m.comps[0] != (jpegComp{2, 2}) || m.comps[1] != (jpegComp{1, 1}) {
		t.Errorf("got %+v, want baseline 4:2:0 with 3 components", m)
	}
}

func FuzzReadJPEGMeta(f *testing.F) {
	jpg := encode(f, "jpeg", quadImage(16, 16))
	f.Add(jpg)
	f.Add(withSegments(jpg, exifSeg(tiffIFD0("MM", 3, 6))))
	for _, b := range garbageTIFF {
		f.Add(withSegments(jpg[:40], exifSeg(b)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := readJPEGMeta(bytes.NewReader(data))
		if m.orientation < 1 || m.orientation > 8 {
			t.Fatalf("orientation %d", m.orientation)
		}
		if o := exifOrientation(data); o < 1 || o > 8 {
			t.Fatalf("exifOrientation %d", o)
		}
	})
}
