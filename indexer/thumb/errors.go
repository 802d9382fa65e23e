package thumb

import "fmt"

// Error is a thumbnail failure with a stable lowercase code, stored in a
// database by the caller.
type Error struct {
	Code    string // one of the Code* constants
	Message string // human-readable detail, including the file's path

	cause error // underlying error, if any; see Unwrap
}

// Error codes of [Error.Code]. They are stable: callers store them.
const (
	// CodeUnsupported: the file is not in a format this package decodes:
	// by its extension, because its content is another known format (PDF,
	// HEIC, a video named .jpg, ...), or because it uses a feature that the
	// decoder does not implement (lossless JPEG, 16-bit BMP, ...).
	CodeUnsupported = "unsupported_format"
	// CodeCorrupt: the decoder failed, the file is empty, truncated or
	// garbage that sniffs as no known format.
	CodeCorrupt = "corrupt_image"
	// CodeTooLarge: the image's width*height is above Options.MaxPixels.
	CodeTooLarge = "image_too_large"
	// CodeFFmpegMissing: the file is a video and no ffmpeg was found.
	CodeFFmpegMissing = "ffmpeg_missing"
	// CodeFFmpegFailed: ffmpeg ran and failed, or produced nothing decodable.
	CodeFFmpegFailed = "ffmpeg_failed"
	// CodeIO: the file could not be opened or read (also used when the
	// context ended while waiting for the memory budget).
	CodeIO = "io_error"
)

// Error returns "code: message".
func (e *Error) Error() string {
	return e.Code + ": " + e.Message
}

// Unwrap returns the underlying error, if any (for example a
// context.Canceled, or an *fs.PathError), for errors.Is and errors.As.
func (e *Error) Unwrap() error {
	return e.cause
}

// newErr makes an *Error with a formatted message.
func newErr(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// wrapErr makes an *Error whose message is the formatted context, a colon and
// cause's text, and which unwraps to cause.
func wrapErr(code string, cause error, format string, args ...any) *Error {
	return &Error{
		Code:    code,
		Message: fmt.Sprintf(format, args...) + ": " + cause.Error(),
		cause:   cause,
	}
}
