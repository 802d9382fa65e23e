package main

import (
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// The exit codes the code returns, as the README and the man page list them.
var exitCodes = []int{ExitOK, ExitNotFound, ExitError, ExitUsage, ExitNoRoot, ExitBadIndex, ExitDiskFull,
	ExitMount, ExitNotReady, ExitServer, ExitHostClash, ExitInterrupted}

// manSection is the text of the man page's section name, up to the next.
func manSection(t *testing.T, page, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, "\n.SH "+name+"\n")
	if !ok {
		t.Fatalf("man page: no section %s", name)
	}
	if i := strings.Index(rest, "\n.SH "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// dupefs docs man: every command with its synopsis, the reference
// sections, every exit code and fstab option the code knows, in ASCII.
func TestManPage(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	page, err := manPage(app)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(page); i++ {
		if page[i] >= 0x80 {
			t.Fatalf("man page: a byte outside ASCII at %d: %q", i, page[max(0, i-20):min(len(page), i+20)])
		}
	}
	var check func(parent string, cmds []*cli.Command)
	check = func(parent string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden || c.Name == "help" {
				continue
			}
			name := parent + " " + c.Name
			if !strings.Contains(page, `\fB`+name+`\fR`) {
				t.Errorf("man page: no synopsis of %s", name)
			}
			check(name, c.Subcommands)
		}
	}
	check("dupefs", app.Commands)
	for _, s := range []string{"DUPLICATES", "THE MOUNTED TREE", "ACTING ON DUPLICATES", "DUPLICATE FOLDERS",
		"THUMBNAILS", "THE INDEX", "EXIT STATUS", "ENVIRONMENT", "FILES", "FSTAB", "SYSTEMD", "SEE ALSO"} {
		manSection(t, page, s)
	}
	exit := manSection(t, page, "EXIT STATUS")
	var listed []int
	for _, m := range regexp.MustCompile(`(?m)^\.TP\n(\d+)$`).FindAllStringSubmatch(exit, -1) {
		n, _ := strconv.Atoi(m[1])
		listed = append(listed, n)
	}
	if !slices.Equal(listed, exitCodes) {
		t.Errorf("man page EXIT STATUS lists %v, the code has %v", listed, exitCodes)
	}
	fstab := manSection(t, page, "FSTAB")
	for k := range helperOptions {
		if !strings.Contains(fstab, k) && !strings.Contains(fstab, strings.ReplaceAll(k, "_", "-")) &&
			!strings.Contains(fstab, strings.ReplaceAll(k, "-", "_")) {
			t.Errorf("man page FSTAB: option %s not listed", k)
		}
	}
	// Every flag of dupefs mount a user may give has its fstab option.
	given := map[string]bool{}
	for _, f := range helperOptions {
		given[f] = true
	}
	for _, f := range mountCommand().Flags {
		if vf, ok := f.(cli.VisibleFlag); ok && !vf.IsVisible() {
			continue
		}
		for _, name := range f.Names() {
			if len(name) > 1 && !given["--"+name] && name != "help" {
				t.Errorf("dupefs mount --%s has no fstab option in helperOptions", name)
			}
		}
	}
	for k := range helperIgnored {
		if !strings.Contains(k, "atime") && !regexp.MustCompile(`\b`+k+`\b`).MatchString(fstab) {
			t.Errorf("man page FSTAB: ignored option %s not listed", k)
		}
	}
	if _, err := exec.LookPath("groff"); err == nil {
		cmd := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z")
		cmd.Stdin = strings.NewReader(page)
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("groff: %v\n%s", err, out)
		}
	}
}

// The README's table of exit codes lists the codes the code returns.
func TestReadmeExitCodes(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## Exit codes\n")
	if !ok {
		t.Fatal("README: no section Exit codes")
	}
	if i := strings.Index(table, "\n## "); i >= 0 {
		table = table[:i]
	}
	var listed []int
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \|`).FindAllStringSubmatch(table, -1) {
		n, _ := strconv.Atoi(m[1])
		listed = append(listed, n)
	}
	if !slices.Equal(listed, exitCodes) {
		t.Errorf("README lists exit codes %v, the code has %v", listed, exitCodes)
	}
}
