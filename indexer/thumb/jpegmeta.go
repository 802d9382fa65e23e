package thumb

import (
	"bytes"
	"encoding/binary"
	"io"
)

// jpegMeta is what the marker segments before the scan data of a JPEG tell.
// The zero value (with orientation 1) means nothing was learnt.
type jpegMeta struct {
	orientation int  // EXIF orientation, 1..8; 1 if absent or invalid
	sofFound    bool // whether a start-of-frame segment was read
	progressive bool // SOF2/SOF6/SOF10/SOF14
	comps       []jpegComp
}

// jpegComp is the sampling factors of one frame component.
type jpegComp struct{ h, v int }

// maxJPEGSegments bounds the segments walked before giving up, so that a
// hostile file cannot make the walk long.
const maxJPEGSegments = 1024

// exifHeader starts the payload of an APP1 segment that holds EXIF data.
var exifHeader = []byte("Exif\x00\x00")

// readJPEGMeta walks the marker segments of the JPEG in r from its start up
// to the first scan, reading the EXIF orientation (from the first APP1
// segment with an EXIF header) and the frame header. It never fails:
// anything malformed ends the walk and keeps what was learnt so far.
func readJPEGMeta(r io.ReaderAt) jpegMeta {
	m := jpegMeta{orientation: 1}
	var hdr [4]byte
	if _, err := r.ReadAt(hdr[:2], 0); err != nil || hdr[0] != 0xFF || hdr[1] != 0xD8 {
		return m
	}
	off := int64(2)
	exifSeen := false
	for range maxJPEGSegments {
		if _, err := r.ReadAt(hdr[:], off); err != nil || hdr[0] != 0xFF {
			return m
		}
		marker := hdr[1]
		switch {
		case marker == 0xFF: // fill byte before a marker
			off++
			continue
		case marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8): // no length
			off += 2
			continue
		case marker == 0xD9 || marker == 0xDA: // EOI, SOS: headers are over
			return m
		}
		length := int64(binary.BigEndian.Uint16(hdr[2:]))
		if length < 2 {
			return m
		}
		payload := length - 2
		switch {
		case marker == 0xE1 && !exifSeen && payload >= int64(len(exifHeader)):
			buf := make([]byte, payload) // at most 65533 bytes
			if _, err := r.ReadAt(buf, off+4); err != nil {
				return m
			}
			if bytes.HasPrefix(buf, exifHeader) {
				exifSeen = true
				m.orientation = exifOrientation(buf[len(exifHeader):])
			}
		case isSOF(marker) && !m.sofFound:
			buf := make([]byte, min(payload, 6+3*255))
			if _, err := r.ReadAt(buf, off+4); err != nil {
				return m
			}
			m.parseSOF(marker, buf)
		}
		off += 2 + length
	}
	return m
}

// isSOF reports whether marker starts a frame (SOF0..SOF15 but DHT, JPG and
// DAC, which share the range).
func isSOF(marker byte) bool {
	return marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC
}

// parseSOF reads a frame header payload: precision, height, width, the
// component count and for each component its id, sampling factors and
// quantisation table.
func (m *jpegMeta) parseSOF(marker byte, b []byte) {
	if len(b) < 6 {
		return
	}
	n := int(b[5])
	if n == 0 || len(b) < 6+3*n {
		return
	}
	m.sofFound = true
	m.progressive = marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE
	m.comps = make([]jpegComp, n)
	for i := range n {
		hv := b[6+3*i+1]
		m.comps[i] = jpegComp{h: max(1, int(hv>>4)), v: max(1, int(hv&0x0F))}
	}
}

// exifOrientation returns the orientation tag (0x0112) of IFD0 of the TIFF
// structure b (the APP1 payload after "Exif\0\0"), or 1 if b is malformed,
// has no such tag or the tag's value is not in 1..8. Every read is bounds
// checked: garbage yields 1.
func exifOrientation(b []byte) int {
	if len(b) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(b[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 1
	}
	if bo.Uint16(b[2:]) != 42 {
		return 1
	}
	ifd := uint64(bo.Uint32(b[4:]))
	if ifd < 8 || ifd+2 > uint64(len(b)) {
		return 1
	}
	count := int(bo.Uint16(b[ifd:]))
	for i := range count {
		e := int(ifd) + 2 + 12*i
		if e+12 > len(b) {
			return 1
		}
		if bo.Uint16(b[e:]) != 0x0112 {
			continue
		}
		if bo.Uint32(b[e+4:]) != 1 { // value count
			return 1
		}
		var v uint32
		switch bo.Uint16(b[e+2:]) { // value type
		case 3: // SHORT, left-justified in the 4-byte value field
			v = uint32(bo.Uint16(b[e+8:]))
		case 4: // LONG
			v = bo.Uint32(b[e+8:])
		default:
			return 1
		}
		if v >= 1 && v <= 8 {
			return int(v)
		}
		return 1
	}
	return 1
}
