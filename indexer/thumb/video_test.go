package thumb

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hasEncoder reports whether ffmpeg lists the named encoder.
func hasEncoder(t *testing.T, ffmpeg, name string) bool {
	t.Helper()
	out, err := exec.Command(ffmpeg, "-hide_banner", "-encoders").Output()
	if err != nil {
		t.Fatalf("ffmpeg -encoders: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) >= 2 && f[1] == name {
			return true
		}
	}
	return false
}

// testVideo generates a test video of the given duration and size with the
// given encoder, or skips if ffmpeg lacks it.
func testVideo(t *testing.T, ffmpeg, name, encoder, duration, size string) string {
	t.Helper()
	if !hasEncoder(t, ffmpeg, encoder) {
		t.Skipf("this ffmpeg has no %s encoder", encoder)
	}
	path := filepath.Join(t.TempDir(), name)
	runFFmpeg(t, ffmpeg, "-f", "lavfi", "-i", "testsrc=duration="+duration+":size="+size+":rate=10",
		"-pix_fmt", "yuv420p", "-c:v", encoder, path)
	return path
}

func TestVideo(t *testing.T) {
	ffmpeg := requireFFmpeg(t)
	for _, tc := range []struct {
		name, encoder, duration, size string
		w, h                          int
	}{
		{"x.mp4", "libx264", "2", "320x240", 256, 192},
		{"x.webm", "libvpx-vp9", "2", "320x240", 256, 192},
		{"x.mkv", "mpeg4", "2", "320x240", 256, 192},
		{"x.mov", "mjpeg", "2", "240x320", 192, 256},
		{"short.mp4", "libx264", "0.5", "320x240", 256, 192}, // no frame at 1 s
		{"small.avi", "mpeg4", "2", "100x50", 100, 50},       // never enlarged
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := testVideo(t, ffmpeg, tc.name, tc.encoder, tc.duration, tc.size)
			res := mustMake(t, path, Options{})
			if res.Kind != KindVideo || res.Width != tc.w || res.Height != tc.h {
				t.Fatalf("got %s %dx%d, want video %dx%d", res.Kind, res.Width, res.Height, tc.w, tc.h)
			}
			decodeResult(t, res)
		})
	}
}

func TestVideoExplicitFFmpeg(t *testing.T) {
	ffmpeg := requireFFmpeg(t)
	path := testVideo(t, ffmpeg, "x.mp4", "libx264", "2", "320x240")
	res := mustMake(t, path, Options{FFmpeg: ffmpeg})
	decodeResult(t, res)
}

func TestFFmpegMissing(t *testing.T) {
	path := writeFile(t, "x.mp4", []byte("not really a video"))
	_, err := Make(context.Background(), path, Options{FFmpeg: filepath.Join(t.TempDir(), "no-such-ffmpeg")})
	wantCode(t, err, CodeFFmpegMissing)

	t.Setenv("PATH", t.TempDir()) // an empty PATH directory: no ffmpeg there
	_, err = Make(context.Background(), path, Options{})
	wantCode(t, err, CodeFFmpegMissing)
}

func TestVideoBadInput(t *testing.T) {
	requireFFmpeg(t)
	e := wantCode(t, mustFail(t, writeFile(t, "bad.mp4", []byte("hello, not a video\n")), Options{}), CodeFFmpegFailed)
	if strings.Contains(e.Message, "(no error output)") || strings.Contains(e.Message, "\n") {
		t.Errorf("message should hold the first line of ffmpeg's stderr: %q", e.Message)
	}
	wantCode(t, mustFail(t, writeFile(t, "empty.mkv", nil), Options{}), CodeFFmpegFailed)
	wantCode(t, mustFail(t, filepath.Join(t.TempDir(), "missing.mp4"), Options{}), CodeIO)
	wantCode(t, mustFail(t, t.TempDir()+"/", Options{}), CodeUnsupported) // no extension
	dir := filepath.Join(t.TempDir(), "dir.mp4")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	wantCode(t, mustFail(t, dir, Options{}), CodeIO)
}

func mustFail(t *testing.T, path string, opt Options) error {
	t.Helper()
	_, err := Make(context.Background(), path, opt)
	if err == nil {
		t.Fatalf("Make(%s) succeeded, want an error", path)
	}
	return err
}

// fakeFFmpeg writes an executable shell script standing in for ffmpeg.
func fakeFFmpeg(t *testing.T, body string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("shell-script fake ffmpeg needs a Unix shell")
	}
	p := filepath.Join(t.TempDir(), "ffmpeg")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVideoFakeFFmpeg(t *testing.T) {
	video := writeFile(t, "v.mp4", []byte("whatever"))
	for _, tc := range []struct{ name, script, inMsg string }{
		{"huge output", "exec head -c 20000000 /dev/zero", "output above"},
		{"not a jpeg", "echo hello", "decode ffmpeg output"},
		{"no frame", "exit 0", "no frame"},
		{"fails", "echo 'first problem' >&2; echo 'second' >&2; exit 3", "first problem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := mustFail(t, video, Options{FFmpeg: fakeFFmpeg(t, tc.script)})
			if e := wantCode(t, err, CodeFFmpegFailed); !strings.Contains(e.Message, tc.inMsg) {
				t.Errorf("message %q does not contain %q", e.Message, tc.inMsg)
			}
		})
	}
}

func TestVideoContextEnds(t *testing.T) {
	video := writeFile(t, "v.mp4", []byte("whatever"))
	ffmpeg := fakeFFmpeg(t, "exec sleep 30")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Make(ctx, video, Options{FFmpeg: ffmpeg})
	if e := wantCode(t, err, CodeFFmpegFailed); !errors.Is(e, context.DeadlineExceeded) {
		t.Errorf("error does not wrap context.DeadlineExceeded: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("ffmpeg was not killed with the context: Make took %v", d)
	}
}
