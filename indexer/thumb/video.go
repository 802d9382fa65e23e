package thumb

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

const (
	// videoTimeout bounds the run time of all ffmpeg runs for one video.
	videoTimeout = 60 * time.Second
	// maxFrameBytes bounds what is read from ffmpeg's standard output.
	maxFrameBytes = 8 << 20
	// maxStderrBytes bounds what is kept of ffmpeg's standard error.
	maxStderrBytes = 64 << 10
	// ffmpegWaitDelay is how long to wait for ffmpeg's pipes to close once
	// it has been killed.
	ffmpegWaitDelay = 5 * time.Second
)

// makeVideo makes the thumbnail of the video file at path from a frame taken
// at 1 s, or at the start if the video is shorter.
func makeVideo(ctx context.Context, path string, opt Options) (Result, error) {
	bin, err := findFFmpeg(opt.FFmpeg)
	if err != nil {
		return Result{}, wrapErr(CodeFFmpegMissing, err, "%s: video thumbnail needs ffmpeg", path)
	}
	// A missing or unreadable file is an I/O error, not an ffmpeg failure.
	f, err := os.Open(path)
	if err != nil {
		return Result{}, wrapErr(CodeIO, err, "open video")
	}
	st, err := f.Stat()
	f.Close()
	if err != nil {
		return Result{}, wrapErr(CodeIO, err, "stat video")
	}
	if !st.Mode().IsRegular() {
		return Result{}, newErr(CodeIO, "%s: not a regular file (%s)", path, st.Mode().Type())
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Result{}, wrapErr(CodeIO, err, "%s: absolute path", path)
	}

	runCtx, cancel := context.WithTimeout(ctx, videoTimeout)
	defer cancel()
	frame, ferr := grabFrame(ctx, runCtx, bin, abs, "1")
	if ferr == nil && len(frame) == 0 { // shorter than 1 s: no frame there
		frame, ferr = grabFrame(ctx, runCtx, bin, abs, "0")
	}
	if ferr != nil {
		return Result{}, ferr
	}
	if len(frame) == 0 {
		return Result{}, newErr(CodeFFmpegFailed, "%s: ffmpeg produced no frame", path)
	}

	img, err := decodeFrame(frame)
	if err != nil {
		return Result{}, wrapErr(CodeFFmpegFailed, err, "%s: decode ffmpeg output", path)
	}
	res, err := thumbnail(img, 1, KindVideo)
	if err != nil {
		return Result{}, wrapErr(CodeFFmpegFailed, err, "%s: ffmpeg frame", path)
	}
	return res, nil
}

// decodeFrame decodes the JPEG frame that ffmpeg wrote, refusing sizes that
// the scale filter cannot have produced.
func decodeFrame(frame []byte) (image.Image, error) {
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(frame))
	if err != nil {
		return nil, err
	}
	if cfg.Width > MaxSide || cfg.Height > MaxSide {
		return nil, fmt.Errorf("frame of unexpected size %dx%d", cfg.Width, cfg.Height)
	}
	img, _, err := guard(func() (image.Image, string, error) {
		m, err := jpeg.Decode(bytes.NewReader(frame))
		return m, "jpeg", err
	})
	return img, err
}

// FindFFmpeg returns the ffmpeg that Make would run for opt.FFmpeg, or an
// error when there is none: callers use it to tell whether videos can be
// done now.
func FindFFmpeg(given string) (string, error) { return findFFmpeg(given) }

// findFFmpeg returns the ffmpeg to run: the given path (or name, looked up in
// PATH) if not empty, else "ffmpeg" from PATH.
func findFFmpeg(given string) (string, error) {
	if given == "" {
		given = "ffmpeg"
	}
	return exec.LookPath(given)
}

// grabFrame runs ffmpeg to extract one frame at seek seconds into the video
// at the absolute path, scaled to fit MaxSide, as JPEG bytes. It returns no
// bytes and no error when ffmpeg succeeds without producing a frame (seek
// beyond the end). parent is the caller's context and ctx, derived from it,
// also carries the run-time bound.
func grabFrame(parent, ctx context.Context, bin, path, seek string) ([]byte, *Error) {
	// Fit the frame in MaxSide x MaxSide, keeping its aspect ratio and never
	// enlarging it.
	scaleFilter := fmt.Sprintf(
		"scale=w='min(%[1]d,iw)':h='min(%[1]d,ih)':force_original_aspect_ratio=decrease", MaxSide)
	args := []string{
		"-nostdin", "-hide_banner", "-loglevel", "error", "-y",
		"-protocol_whitelist", "file", // no network, even from playlists
		"-ss", seek, "-i", "file:" + path,
		"-map", "0:v:0", "-an", "-sn", "-dn",
		"-frames:v", "1", "-vf", scaleFilter,
		"-f", "image2pipe", "-vcodec", "mjpeg", "-q:v", "2", "-",
	}
	cmdCtx, kill := context.WithCancel(ctx)
	defer kill()
	cmd := exec.CommandContext(cmdCtx, bin, args...)
	stdout := &capWriter{limit: maxFrameBytes, onOverflow: kill}
	stderr := &capWriter{limit: maxStderrBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = ffmpegWaitDelay
	err := cmd.Run()
	switch {
	case parent.Err() != nil:
		return nil, wrapErr(CodeFFmpegFailed, parent.Err(), "%s: ffmpeg stopped", path)
	case stdout.overflow:
		return nil, newErr(CodeFFmpegFailed, "%s: ffmpeg output above %d bytes", path, maxFrameBytes)
	case ctx.Err() != nil:
		return nil, newErr(CodeFFmpegFailed, "%s: ffmpeg ran longer than %v", path, videoTimeout)
	case err != nil:
		return nil, newErr(CodeFFmpegFailed, "%s: ffmpeg failed (%v): %s", path, err, firstLine(stderr.buf.Bytes()))
	}
	return stdout.buf.Bytes(), nil
}

// firstLine returns the first non-blank line of b, trimmed and cut to 300
// bytes, or "(no error output)".
func firstLine(b []byte) string {
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSpace(line); line != "" {
			if len(line) > 300 {
				line = line[:300] + "..."
			}
			return strings.ToValidUTF8(line, "?")
		}
	}
	return "(no error output)"
}

// capWriter keeps the first limit bytes written to it and discards (but
// accepts, so that the writing process is never blocked) the rest, calling
// onOverflow, if set, the first time that happens.
type capWriter struct {
	buf        bytes.Buffer
	limit      int
	overflow   bool
	onOverflow func()
}

func (w *capWriter) Write(p []byte) (int, error) {
	room := w.limit - w.buf.Len()
	if len(p) <= room {
		w.buf.Write(p)
		return len(p), nil
	}
	w.buf.Write(p[:max(0, room)])
	if !w.overflow && w.onOverflow != nil {
		w.onOverflow()
	}
	w.overflow = true
	return len(p), nil
}
