package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The fdupes format is raw bytes, as fdupes prints it: duperemove --fdupes
// must find every file of a group, names with a backslash or bytes that
// are not UTF-8 included.
func TestDuperemoveReadsTheFdupesReport(t *testing.T) {
	if _, err := exec.LookPath("duperemove"); err != nil {
		t.Fatal("duperemove is needed for this test: apt-get install duperemove")
	}
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	names := []string{"back\\slash.bin", "bad-\xff\xfe.bin", "plain.bin", "sub/tab\there.bin"}
	content := bytes.Repeat([]byte("duperemove must find me "), 20000)
	for _, n := range names {
		p := filepath.Join(dir, n)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)
	report := mustRun(t, db, "groups", "--format", "fdupes").stdout
	for _, n := range names {
		if !strings.Contains(report, filepath.Join(dir, n)+"\n") {
			t.Errorf("fdupes report lacks the raw path %q:\n%q", n, report)
		}
	}
	cmd := exec.Command("duperemove", "--fdupes")
	cmd.Stdin = strings.NewReader(report)
	out, _ := cmd.CombinedOutput() // dedupe itself fails where the file system has no FIDEDUPERANGE
	for _, n := range names {
		if !bytes.Contains(out, []byte("Queue entire file for dedupe: "+filepath.Join(dir, n)+"\n")) {
			t.Errorf("duperemove --fdupes did not find %q:\n%s", n, out)
		}
	}
}
