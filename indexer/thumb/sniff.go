package thumb

import "bytes"

// otherSignatures are magic numbers of well-known formats that this package
// does not decode, so that such a file (a PDF or a video named .jpg, say) is
// reported as CodeUnsupported rather than CodeCorrupt.
var otherSignatures = []struct {
	offset int
	magic  string
	name   string
}{
	{0, "%PDF-", "PDF"},
	{0, "PK\x03\x04", "ZIP"},
	{0, "8BPS", "Photoshop PSD"},
	{0, "\x1a\x45\xdf\xa3", "Matroska/WebM video"},
	{0, "\x00\x00\x01\xba", "MPEG program stream"},
	{0, "OggS", "Ogg"},
	{0, "fLaC", "FLAC audio"},
	{0, "ID3", "MP3 audio"},
	{0, "\xff\x0a", "JPEG XL"},
	{0, "\x00\x00\x00\x0cJXL \x0d\x0a\x87\x0a", "JPEG XL"},
	{0, "\x00\x00\x01\x00", "ICO"},
	{0, "\x7fELF", "ELF executable"},
	{0, "\x1f\x8b", "gzip"},
	{8, "AVI ", "AVI video"},
	{8, "WAVE", "WAV audio"},
}

// sniffOther returns the name of the known non-supported format whose
// signature head (the file's first bytes) starts with, or "".
func sniffOther(head []byte) string {
	if len(head) >= 12 && string(head[4:8]) == "ftyp" {
		switch string(head[8:12]) {
		case "heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1":
			return "HEIF image"
		case "avif", "avis":
			return "AVIF image"
		default:
			return "ISO media (MP4/QuickTime)"
		}
	}
	if len(head) >= 8 && string(head[4:8]) == "moov" {
		return "QuickTime video"
	}
	for _, s := range otherSignatures {
		if len(head) >= s.offset+len(s.magic) && bytes.HasPrefix(head[s.offset:], []byte(s.magic)) {
			if s.offset == 8 && string(head[:4]) != "RIFF" {
				continue
			}
			return s.name
		}
	}
	return ""
}
