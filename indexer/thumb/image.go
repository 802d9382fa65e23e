package thumb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"io/fs"
	"os"

	// Decoders registered with package image, so that image.DecodeConfig
	// and image.Decode detect the format from the content.
	_ "image/gif"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"
)

// makeImage makes the thumbnail of the image file at path.
func makeImage(ctx context.Context, path string, opt Options) (Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return Result{}, wrapErr(CodeIO, err, "open image")
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Result{}, wrapErr(CodeIO, err, "stat image")
	}
	if !st.Mode().IsRegular() {
		return Result{}, newErr(CodeIO, "%s: not a regular file (%s)", path, st.Mode().Type())
	}
	if st.Size() == 0 {
		return Result{}, newErr(CodeCorrupt, "%s: empty file", path)
	}

	cfg, format, err := guard(func() (image.Config, string, error) {
		return image.DecodeConfig(bufio.NewReader(f))
	})
	if err != nil {
		return Result{}, classifyDecodeErr(f, path, "read image header", err)
	}
	if cfg.Width < 1 || cfg.Height < 1 {
		return Result{}, newErr(CodeCorrupt, "%s: %s image has no pixels (%dx%d)", path, format, cfg.Width, cfg.Height)
	}
	if limit := opt.maxPixels(); int64(cfg.Width) > limit/int64(cfg.Height) {
		return Result{}, newErr(CodeTooLarge, "%s: %s image of %dx%d is above the limit of %d pixels",
			path, format, cfg.Width, cfg.Height, limit)
	}
	meta := jpegMeta{orientation: 1}
	if format == "jpeg" {
		meta = readJPEGMeta(f)
	}

	need := estimateDecodeBytes(format, cfg, meta)
	if err := opt.Budget.Acquire(ctx, need); err != nil {
		return Result{}, wrapErr(CodeIO, err, "%s: wait for %d bytes of decode budget", path, need)
	}
	defer opt.Budget.Release(need)

	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Result{}, wrapErr(CodeIO, err, "rewind image")
	}
	img, _, err := guard(func() (image.Image, string, error) {
		return image.Decode(bufio.NewReader(f))
	})
	if err != nil {
		return Result{}, classifyDecodeErr(f, path, "decode "+format+" image", err)
	}
	res, err := thumbnail(img, meta.orientation, KindImage)
	if err != nil {
		return Result{}, wrapErr(CodeCorrupt, err, "%s: %s image", path, format)
	}
	return res, nil
}

// guard calls fn and turns a panic in it (a decoder bug on hostile input)
// into an error.
func guard[T any](fn func() (T, string, error)) (v T, format string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v", r)
		}
	}()
	return fn()
}

// classifyDecodeErr turns an error of image.DecodeConfig or image.Decode on
// the file f into an *Error: CodeIO for a failed read, CodeUnsupported for
// content that is a known non-supported format or that uses a feature the
// decoder does not implement (lossless JPEG, 16-bit BMP, ...), CodeCorrupt
// otherwise.
func classifyDecodeErr(f *os.File, path, doing string, err error) *Error {
	var (
		pe    *fs.PathError
		jpegU jpeg.UnsupportedError
		pngU  png.UnsupportedError
		tiffU tiff.UnsupportedError
	)
	switch {
	case errors.As(err, &pe):
		return wrapErr(CodeIO, err, "%s: %s", path, doing)
	case errors.As(err, &jpegU), errors.As(err, &pngU), errors.As(err, &tiffU), errors.Is(err, bmp.ErrUnsupported):
		return wrapErr(CodeUnsupported, err, "%s: %s", path, doing)
	}
	if errors.Is(err, image.ErrFormat) {
		head := make([]byte, 64)
		n, _ := f.ReadAt(head, 0)
		if name := sniffOther(head[:n]); name != "" {
			return newErr(CodeUnsupported, "%s: content is %s, not a supported image format", path, name)
		}
		return newErr(CodeCorrupt, "%s: content is not a recognised image format", path)
	}
	return wrapErr(CodeCorrupt, err, "%s: %s", path, doing)
}
