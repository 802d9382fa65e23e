package fusefs

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dupefs/dupefs/store"
)

// makeThumb does what a thumbnail worker does for the group of content i:
// admit, claim, write the cache file, finish ready. It returns the bytes.
func (t *testFS) makeThumb(i int, w, h int) []byte {
	t.tb.Helper()
	g, err := t.db.Files().GroupByKey(context.Background(), "sha256", sum(i))
	if err != nil {
		t.tb.Fatal(err)
	}
	if _, _, err := t.db.Thumbs().AdmitThumbs(context.Background(), []store.Admission{{ContentID: g.ContentID, MediaType: "image"}}, 100); err != nil {
		t.tb.Fatal(err)
	}
	return t.finishThumb(i, w, h)
}

// finishThumb claims the next pending thumbnail, which must be that of
// content i, and makes it a w x h JPEG.
func (t *testFS) finishThumb(i, w, h int) []byte {
	t.tb.Helper()
	ctx := context.Background()
	row, l, err := t.db.Thumbs().ClaimThumb(ctx, "test", time.Minute)
	if err != nil || row.Key != keyOf(i) {
		t.tb.Fatalf("claim: %+v %v", row, err)
	}
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for p := range m.Pix {
		m.Pix[p] = uint8(p * i)
	}
	m.Set(0, 0, color.White)
	var buf bytes.Buffer
	jpeg.Encode(&buf, m, nil)
	if err := os.WriteFile(filepath.Join(t.thumbs, keyOf(i)+".jpg"), buf.Bytes(), 0o600); err != nil {
		t.tb.Fatal(err)
	}
	if err := t.db.Thumbs().FinishThumbReady(ctx, l, w, h, int64(buf.Len())); err != nil {
		t.tb.Fatal(err)
	}
	return buf.Bytes()
}

func TestThumbsServedLive(t *testing.T) {
	tf := mountTest(t, nil)
	tf.add("/p", copyOf{"/p/a", "x.jpg", 10, 1, 1}, copyOf{"/p/b", "x.jpg", 10, 2, 1},
		copyOf{"/p/a", "y.png", 20, 3, 2}, copyOf{"/p/b", "y.png", 20, 4, 2})
	dir := filepath.Join(tf.mnt, "thumbs")
	one := filepath.Join(dir, keyOf(1)+".jpg")
	if n := tf.names("thumbs"); len(n) != 0 {
		t.Fatalf("/thumbs lists %q before any thumbnail is made", n)
	}
	if _, err := os.Stat(one); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a thumbnail not made yet: %v", err) // also caches a negative entry
	}

	data := tf.makeThumb(1, 256, 171)
	eventually(t, "the new thumbnail shows", func() bool { _, err := os.Stat(one); return err == nil })
	var st syscall.Stat_t
	if err := syscall.Stat(one, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != int64(len(data)) || st.Mode != syscall.S_IFREG|0o444 || st.Ino>>56 != kindThumb {
		t.Fatalf("stat: size %d (want %d) mode %o ino %x", st.Size, len(data), st.Mode, st.Ino)
	}
	for range 2 { // the second read comes from the kernel's page cache
		got, err := os.ReadFile(one)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read: %d bytes, %v", len(got), err)
		}
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || format != "jpeg" || cfg.Width != 256 || cfg.Height != 171 {
		t.Fatalf("decode the served thumbnail: %v %s %+v", err, format, cfg)
	}
	if _, err := os.OpenFile(one, os.O_WRONLY, 0); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("open for writing: %v, want EROFS", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "new.jpg"), nil, 0o644); err == nil {
		t.Fatal("created a file in /thumbs")
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	ents := getdents(t, fd, 10)
	syscall.Close(fd)
	if len(ents) != 3 || ents[2].name != keyOf(1)+".jpg" || ents[2].ino != st.Ino {
		t.Fatalf("listing: %+v (st_ino %x)", ents, st.Ino)
	}

	tf.makeThumb(2, 100, 256)
	eventually(t, "the second thumbnail lists", func() bool { return len(tf.names("thumbs")) == 2 })

	// The group of 1 breaks up: its thumbnail is no longer served, though
	// its row and file wait for the cleanup job.
	err = tf.db.Write(context.Background(), func(tx *store.Tx) error {
		b, _ := tx.ScanBatch(1, "sha256")
		defer b.Close()
		return b.LoseFolder("/p/b")
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the thumbnail of the broken group goes", func() bool {
		_, err := os.Stat(one)
		return errors.Is(err, os.ErrNotExist)
	})
	// The listing follows once the view has applied the change (a lookup
	// reads the index itself, so it can see the change first).
	eventually(t, "/thumbs lists no thumbnail", func() bool { return len(tf.names("thumbs")) == 0 })
}

// TestThumbRemadeIsReadAfresh: a thumbnail made again with other bytes is
// read afresh, though the kernel keeps thumbnail pages between opens.
func TestThumbRemadeIsReadAfresh(t *testing.T) {
	tf := mountTest(t, nil)
	tf.add("/p", copyOf{"/p/a", "x.jpg", 10, 1, 1}, copyOf{"/p/b", "x.jpg", 10, 2, 1})
	one := filepath.Join(tf.mnt, "thumbs", keyOf(1)+".jpg")
	first := tf.makeThumb(1, 64, 64)
	eventually(t, "the thumbnail shows", func() bool { _, err := os.Stat(one); return err == nil })
	if got, _ := os.ReadFile(one); !bytes.Equal(got, first) {
		t.Fatal("first read differs")
	}
	th, err := tf.db.View().ReadyThumb(context.Background(), "sha256", sum(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := tf.db.Thumbs().RemakeThumb(context.Background(), th.ID); err != nil {
		t.Fatal(err)
	}
	second := tf.finishThumb(1, 48, 80)
	eventually(t, "the remade thumbnail is read", func() bool {
		got, err := os.ReadFile(one)
		return err == nil && bytes.Equal(got, second)
	})
}
