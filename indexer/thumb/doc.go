// Package thumb turns an image or video file into a small JPEG thumbnail; the
// indexer's thumbnail workers call it.
//
// Images (JPEG, PNG, GIF, WebP, BMP, TIFF) are decoded in process with the
// standard library and golang.org/x/image. Their format is detected from the
// content, their size is checked before decoding, and the memory a decode may
// need is reserved from a shared [Budget] first, so that many goroutines can
// make thumbnails at once without running the process out of memory. JPEG
// EXIF orientation is honoured.
//
// Videos go through the ffmpeg binary, run as a subprocess with a bounded
// run time and output size.
//
// Every thumbnail fits in [MaxSide] x [MaxSide] pixels, keeps the aspect
// ratio of its source, is never larger than its source and is encoded as a
// baseline JPEG of quality 85 with transparency composited onto white.
//
// The package holds no global mutable state of its own: all sharing goes
// through the [Budget] that the caller passes in [Options]. Importing it
// registers the GIF, JPEG, PNG, BMP, TIFF and WebP decoders with package
// image, as blank imports of those decoders do.
//
// Make is the one entry point: it tells the kind by the file name
// (KindOf), and returns a [Result] or an [*Error] whose Code is one of the
// stable Code* constants, which the caller stores with the failed row and
// shows to the user. It takes no lease and writes nothing: the indexer's
// Thumbnailer claims the thumbnail rows under their leases, picks the copy
// to read and stores the result.
//
// A file is untrusted input: every size is checked before the memory it
// implies is spent (MaxPixels, the budget estimate, ffmpeg's output cap),
// a decoder's panic on hostile input becomes an error, not a crash, and a
// known format of another kind (a PDF named .jpg) is told apart from a
// damaged image so the user learns which it is.
//
// The files, by concern:
//
//	thumb.go     Make, Options, Result, KindOf, MaxSide
//	errors.go    Error and its codes
//	image.go     images: open, sniff, check the size, reserve, decode
//	sniff.go     the signatures of formats it does not decode
//	jpegmeta.go  the JPEG frame header and EXIF orientation, read without
//	             decoding
//	estimate.go  the memory a decode may take, by format, for the Budget
//	budget.go    Budget: bytes shared by concurrent decodes, FIFO
//	resize.go    the box filter down to twice the thumbnail size
//	finish.go    the last scaling, orientation, white background, JPEG
//	video.go     videos: a frame from ffmpeg, bounded in time and size
package thumb
