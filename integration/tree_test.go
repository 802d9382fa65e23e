package integration

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// trickyTree writes under dir the cases an index must get right and returns
// the true groups (paths relative to dir). Names hold spaces, a newline,
// invalid UTF-8, 255 bytes and a leading dash; there are hard links, files
// of one size that differ at the first, the middle and the last byte, files
// sharing a long prefix, empty files, symlinks of every kind, a FIFO and a
// sparse file.
func trickyTree(tb testing.TB, dir string) [][]string {
	tb.Helper()
	rnd := rand.New(rand.NewSource(42))
	random := func(n int) []byte {
		b := make([]byte, n)
		rnd.Read(b)
		return b
	}
	write := func(rel string, content []byte) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	link := func(old, new string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, new)), 0o755)
		if err := os.Link(filepath.Join(dir, old), filepath.Join(dir, new)); err != nil {
			tb.Fatal(err)
		}
	}
	symlink := func(target, rel string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755)
		if err := os.Symlink(target, filepath.Join(dir, rel)); err != nil {
			tb.Fatal(err)
		}
	}
	flip := func(b []byte, i int) []byte {
		c := append([]byte(nil), b...)
		c[i] ^= 0xff
		return c
	}

	// One small content under odd names.
	odd := []byte("the same few bytes\n")
	long255 := strings.Repeat("n", 251) + ".txt"
	oddNames := []string{"odd/with space.txt", "odd/new\nline.txt", "odd/bad-\xff\xfe.txt",
		"odd/" + long255, "odd/-leading-dash", "odd/back\\slash", "odd/tab\there"}
	for _, n := range oddNames {
		write(n, odd)
	}

	// Hard links: a linked file with a real copy groups with all three
	// paths; a linked pair alone is no group.
	linked := random(20000)
	write("links/orig", linked)
	link("links/orig", "links/hard")
	write("links/elsewhere/copy", linked)
	write("pair/p1", random(3000))
	link("pair/p1", "pair/p2")

	// Same size, different content.
	small := random(1000)
	write("diff/small-a", small)
	write("diff/small-first", flip(small, 0))
	write("diff/small-last", flip(small, len(small)-1))
	large := random(300000)
	write("diff/large-a", large)
	write("diff/large-first", flip(large, 0))
	write("diff/large-middle", flip(large, len(large)/2))
	write("diff/large-last", flip(large, len(large)-1))

	// A long shared prefix: p1 and p2 differ in their last byte, p3 is a
	// copy of p1.
	prefix := random(200000)
	p1 := append(append([]byte(nil), prefix...), '1')
	write("prefix/p1", p1)
	write("prefix/p2", append(append([]byte(nil), prefix...), '2'))
	write("prefix/deeper/p3", p1)

	// Empty files never group.
	write("empty/e1", nil)
	write("empty/e2", nil)

	// Symlinks are not followed.
	symlink("../links/orig", "sym/to-file")
	symlink("../odd", "sym/to-dir")
	symlink("../nowhere", "sym/dangling")
	symlink("loop", "sym/loop")
	symlink("../sym", "sym/to-parent")

	// A FIFO is skipped (reading it would block forever).
	os.MkdirAll(filepath.Join(dir, "special"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(dir, "special/fifo"), 0o644); err != nil {
		tb.Fatal(err)
	}

	// A sparse file and a dense one with the same (zero) content.
	write("sparse/dense", make([]byte, 1<<20))
	f, err := os.Create(filepath.Join(dir, "sparse/holey"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := f.Truncate(1 << 20); err != nil {
		tb.Fatal(err)
	}
	f.Close()

	// Two large copies, read in full.
	bigc := random(3 << 20)
	write("big/a.bin", bigc)
	write("big/b.bin", bigc)

	want := [][]string{
		oddNames,
		{"links/orig", "links/hard", "links/elsewhere/copy"},
		{"prefix/p1", "prefix/deeper/p3"},
		{"sparse/dense", "sparse/holey"},
		{"big/a.bin", "big/b.bin"},
	}
	sortGroups(want)
	return want
}

func TestIndexFindsExactlyTheTrueGroups(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	want := trickyTree(t, dir)
	db := filepath.Join(base, "index.db")
	log1 := filepath.Join(base, "reads1")
	mustRun(t, db, "index", "--read-log", log1, dir)
	if got := groups(t, db, dir); !equalGroups(got, want) {
		t.Fatalf("groups:\n got  %q\n want %q", got, want)
	}
	reads, _ := os.ReadFile(log1)
	// Never read: what is not a regular file, empty files, a size held by
	// one inode only; never read whole: large files whose first or last
	// 4 KiB differ from every other file of their size.
	for _, never := range []string{"special/", "empty/", "sym/", "pair/",
		`full "` + dir + "/diff/large-first", `full "` + dir + "/diff/large-last"} {
		if strings.Contains(string(reads), never) {
			t.Errorf("read something it had no need to: %s\n%s", never, reads)
		}
	}
	// Every file is read at most once per kind.
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(reads)), "\n") {
		if seen[l] {
			t.Errorf("read twice: %s", l)
		}
		seen[l] = true
	}

	// A second index of the unchanged tree lists the same and reads no file.
	log2 := filepath.Join(base, "reads2")
	mustRun(t, db, "index", "--read-log", log2, dir)
	if b, _ := os.ReadFile(log2); len(b) != 0 {
		t.Fatalf("second index read files:\n%s", b)
	}
	if got := groups(t, db, dir); !equalGroups(got, want) {
		t.Fatalf("groups after re-index:\n got  %q\n want %q", got, want)
	}

	// The other formats agree on the group count.
	fd := mustRun(t, db, "groups", "--format", "fdupes").stdout
	if n := strings.Count(fd, "\n\n"); n != len(want) {
		t.Errorf("fdupes format has %d groups, want %d:\n%s", n, len(want), fd)
	}
	csv := mustRun(t, db, "groups", "--format", "csv").stdout
	if !strings.HasPrefix(csv, "size,hash,count,files\n") || strings.Count(csv, "\n") < len(want)+1 {
		t.Errorf("csv:\n%s", csv)
	}
	text := mustRun(t, db, "groups").stdout
	if !strings.HasPrefix(text, "# Report by fclones ") || !strings.Contains(text, "# hard links") {
		t.Errorf("text:\n%s", text)
	}
}

func TestGroupsPagination(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	want := trickyTree(t, dir)
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	var all [][]string
	after := ""
	for i := 0; i < 10; i++ {
		args := []string{"groups", "--format", "fdupes", "--limit", "2"}
		if after != "" {
			args = append(args, "--after", after)
		}
		r := mustRun(t, db, args...)
		for _, g := range strings.Split(strings.TrimSuffix(r.stdout, "\n\n"), "\n\n") {
			if g != "" {
				all = append(all, strings.Split(g, "\n"))
			}
		}
		_, cur, ok := strings.Cut(r.stderr, "--after ")
		if !ok {
			break
		}
		after = strings.TrimSpace(cur)
	}
	if len(all) != len(want) {
		t.Fatalf("paged through %d groups, want %d", len(all), len(want))
	}
	if r := dupefs(t, db, "groups", "--after", "garbage"); r.code != 3 {
		t.Errorf("bad cursor: exit %d, want 3", r.code)
	}
}
