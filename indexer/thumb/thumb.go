package thumb

import (
	"context"
	"path/filepath"
	"strings"
)

// MaxSide is the longest side of a thumbnail in pixels.
const MaxSide = 256

// Media kinds, as returned by [KindOf] and stored in [Result.Kind].
const (
	KindImage = "image"
	KindVideo = "video"
)

// defaultMaxPixels is the limit on an image's width*height used when
// [Options.MaxPixels] is 0.
const defaultMaxPixels int64 = 150_000_000

// jpegQuality is the quality of every thumbnail.
const jpegQuality = 85

// KindOf tells by file name extension (case-insensitive) whether a file is an
// image (.jpg .jpeg .png .gif .webp .bmp .tif .tiff) or a video (.mp4 .mov
// .m4v .mkv .webm .avi), and "" otherwise.
func KindOf(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp", ".tif", ".tiff":
		return KindImage
	case ".mp4", ".mov", ".m4v", ".mkv", ".webm", ".avi":
		return KindVideo
	}
	return ""
}

// Options for making a thumbnail.
type Options struct {
	// Budget bounds the memory of concurrent image decodes. It is required
	// for images in production; a nil Budget imposes no bound at all.
	Budget *Budget
	// FFmpeg is the path of the ffmpeg binary; "" means look it up in PATH.
	FFmpeg string
	// MaxPixels is the hard limit for an image's width*height; 0 means
	// 150_000_000. Larger images fail with CodeTooLarge undecoded.
	MaxPixels int64
}

func (o Options) maxPixels() int64 {
	if o.MaxPixels > 0 {
		return o.MaxPixels
	}
	return defaultMaxPixels
}

// Result is a finished thumbnail.
type Result struct {
	// JPEG is a baseline JPEG of quality 85.
	JPEG []byte
	// Width and Height are those of the thumbnail: both in 1..MaxSide, with
	// the aspect ratio of the source kept.
	Width, Height int
	// Kind is KindImage or KindVideo.
	Kind string
}

// Make makes the thumbnail of the file at path, whose kind is told by
// [KindOf] from its name. A file whose name has no known extension fails with
// CodeUnsupported.
//
// Errors are always of type *[Error]. When ctx ends while Make waits or runs,
// the returned Error wraps ctx.Err(), so errors.Is(err, context.Canceled)
// tells a cancellation (which a caller should not store as a failure of the
// file) from a real one.
func Make(ctx context.Context, path string, opt Options) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, wrapErr(CodeIO, err, "thumbnail of %s not started", path)
	}
	switch kind := KindOf(path); kind {
	case KindImage:
		return makeImage(ctx, path, opt)
	case KindVideo:
		return makeVideo(ctx, path, opt)
	default:
		return Result{}, newErr(CodeUnsupported, "%s: unknown file extension %q", path, filepath.Ext(path))
	}
}
