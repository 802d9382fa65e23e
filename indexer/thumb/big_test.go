package thumb

import (
	"bufio"
	"context"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dupefs/dupefs/integration/testenv"
)

// writeBigJPEG writes a w x h 4:2:0 JPEG, white with a red top-left
// quadrant, which compresses to little.
func writeBigJPEG(t *testing.T, path string, w, h int) {
	t.Helper()
	m := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	fillPlane := func(pix []uint8, stride, pw, ph int, inner, outer uint8) {
		row := make([]uint8, stride)
		for x := range row {
			row[x] = outer
		}
		redRow := append([]uint8{}, row...)
		for x := range pw / 2 {
			redRow[x] = inner
		}
		for y := range ph {
			if y < ph/2 {
				copy(pix[y*stride:], redRow)
			} else {
				copy(pix[y*stride:], row)
			}
		}
	}
	ry, rcb, rcr := color.RGBToYCbCr(0xFF, 0, 0)
	cw, ch := (w+1)/2, (h+1)/2
	fillPlane(m.Y, m.YStride, w, h, ry, 0xFF)
	fillPlane(m.Cb, m.CStride, cw, ch, rcb, 0x80)
	fillPlane(m.Cr, m.CStride, cw, ch, rcr, 0x80)

	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	if err := jpeg.Encode(bw, m, &jpeg.Options{Quality: 75}); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// estimateFile returns estimateDecodeBytes for the JPEG file at path.
func estimateFile(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, format, err := image.DecodeConfig(bufio.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	return estimateDecodeBytes(format, cfg, readJPEGMeta(f))
}

// TestBigJPEG decodes a 100-megapixel JPEG, alone under a budget smaller
// than it needs, then twice at once under a budget that fits only one: the
// second decode must wait for the first.
func TestBigJPEG(t *testing.T) {
	if testing.Short() {
		t.Skip("100-megapixel JPEG skipped in -short mode")
	}
	path := filepath.Join(t.TempDir(), "big.jpg")
	writeBigJPEG(t, path, 10_000, 10_000)
	est := estimateFile(t, path)
	if est < 150_000_000 || est > 200_000_000 {
		t.Fatalf("estimate %d for a 100 MP 4:2:0 baseline JPEG, want 150..200 MB", est)
	}
	check := func(t *testing.T, res Result) {
		t.Helper()
		if res.Width != 256 || res.Height != 256 {
			t.Fatalf("got %dx%d, want 256x256", res.Width, res.Height)
		}
		checkQuad(t, decodeResult(t, res))
	}

	t.Run("alone above budget", func(t *testing.T) {
		opt := Options{Budget: NewBudget(64 << 20)}
		check(t, mustMake(t, path, opt))
		if _, peak, _ := opt.Budget.stats(); peak != est {
			t.Errorf("peak budget use %d, want the estimate %d", peak, est)
		}
	})

	t.Run("second waits", func(t *testing.T) {
		size := est + est/2 // room for one decode, not two
		opt := Options{Budget: NewBudget(size)}
		// Hold the whole budget until both decodes are queued, so that they
		// certainly compete.
		if err := opt.Budget.Acquire(context.Background(), size); err != nil {
			t.Fatal(err)
		}
		results := make([]Result, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() { results[i], errs[i] = Make(context.Background(), path, opt) })
		}
		waitWaiting(t, opt.Budget, 2)
		opt.Budget.Release(size)
		waitWaiting(t, opt.Budget, 1) // one decodes, the other still waits
		if used, _, _ := opt.Budget.stats(); used != est {
			t.Errorf("used %d while one decode runs, want %d", used, est)
		}
		testenv.Returns(t, time.Minute, "both decodes", wg.Wait)
		for i := range 2 {
			if errs[i] != nil {
				t.Fatalf("decode %d: %v", i, errs[i])
			}
			check(t, results[i])
		}
		if used, peak, _ := opt.Budget.stats(); used != 0 || peak > size {
			t.Errorf("used %d, peak %d: the decodes overlapped (budget %d)", used, peak, size)
		}
	})
}
