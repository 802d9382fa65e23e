package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// folderTree writes a photo album, a copy of it laid out differently
// (renamed files, a subfolder moved), and an edited copy.
func folderTree(t *testing.T, dir string) {
	t.Helper()
	photo := func(i int) string { return strings.Repeat(string(rune('a'+i)), 2000+i) }
	files := map[string]string{
		"album/2019/one.jpg": photo(1), "album/2019/two.jpg": photo(2), "album/three.jpg": photo(3),
		"backup/album/IMG_1.jpg": photo(1), "backup/album/IMG_2.jpg": photo(2), "backup/album/IMG_3.jpg": photo(3),
		"edited/one.jpg": photo(1), "edited/two.jpg": photo(2), "edited/three.jpg": "edited: " + photo(3),
	}
	for rel, c := range files {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type foldersReport struct {
	Exact []struct {
		Key     string   `json:"key"`
		Files   int      `json:"files"`
		Bytes   int      `json:"bytes"`
		Folders []string `json:"folders"`
	} `json:"exact"`
	Partial []struct {
		A          string  `json:"a"`
		B          string  `json:"b"`
		Similarity float64 `json:"similarity"`
	} `json:"partial"`
}

// From the README: index, dupefs folders, the mount's /by-folder, check
// DIR, and linking a folder group by its key.
func TestFoldersAsAUserSeesThem(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "tree")
	folderTree(t, dir)
	db := filepath.Join(base, "index.db")
	mustRun(t, db, "index", dir)

	var rep foldersReport
	out := mustRun(t, db, "folders", "--format", "json").stdout
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("folders json: %v\n%s", err, out)
	}
	if len(rep.Exact) != 1 || !slices.Equal(rep.Exact[0].Folders, []string{dir + "/album", dir + "/backup"}) {
		t.Fatalf("exact groups:\n%s", out)
	}
	key := rep.Exact[0].Key
	// As the definitions give them: edited shares 2 of 4 with album,
	// backup and backup/album, 2 of 3 with album/2019, and album/2019 is
	// 2 of 3 of backup. album/2019 ≈ backup restates album = backup (an
	// exact group above it), backup/album ≈ edited restates backup ≈
	// edited (as alike); album/2019 ≈ edited is more alike than every pair
	// above it and is kept.
	var pairs []string
	for _, p := range rep.Partial {
		pairs = append(pairs, strings.TrimPrefix(p.A, dir+"/")+" "+strings.TrimPrefix(p.B, dir+"/"))
	}
	slices.Sort(pairs)
	if want := []string{"album edited", "album/2019 edited", "backup edited"}; !slices.Equal(pairs, want) {
		t.Fatalf("partial pairs %q, want %q", pairs, want)
	}
	if r := dupefs(t, db, "folders", "--min-similarity", "0"); r.code != 3 || !strings.Contains(r.stderr, "1 to 100") {
		t.Errorf("folders --min-similarity 0: exit %d, %s", r.code, r.stderr)
	}

	// check DIR: a stick holding the album again.
	stick := filepath.Join(base, "stick")
	folderTree(t, stick)
	os.RemoveAll(filepath.Join(stick, "edited"))
	os.RemoveAll(filepath.Join(stick, "backup"))
	r := dupefs(t, db, "check", filepath.Join(stick, "album"))
	if r.code != 0 || r.stdout != dir+"/album\n"+dir+"/backup\n" {
		t.Errorf("check of a copy of the album: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	os.WriteFile(filepath.Join(stick, "album/new.jpg"), []byte("a new photo"), 0o644)
	if r := dupefs(t, db, "check", filepath.Join(stick, "album")); r.code != 1 || !strings.Contains(r.stdout, "new.jpg") {
		t.Errorf("check with a new photo: exit %d, stdout %q", r.code, r.stdout)
	}
	if r := dupefs(t, db, "check", filepath.Join(stick, "nothing")); r.code != 2 {
		t.Errorf("check of a missing folder: exit %d", r.code)
	}

	// The mount shows the group; status.json counts it.
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	p := startMount(t, db, mnt, "--no-index")
	s, _ := readStatus(t, mnt)
	if s.Totals.FolderGroups != 1 || s.Totals.FolderWasted != rep.Exact[0].Bytes {
		t.Errorf("status.json: %d folder groups, %d wasted bytes", s.Totals.FolderGroups, s.Totals.FolderWasted)
	}
	var targets []string
	for _, n := range readNames(t, filepath.Join(mnt, "by-folder", key)) {
		tgt, err := os.Readlink(filepath.Join(mnt, "by-folder", key, n))
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tgt)
	}
	slices.Sort(targets)
	if !slices.Equal(targets, []string{dir + "/album", dir + "/backup"}) {
		t.Errorf("/by-folder/%s -> %q", key, targets)
	}
	p.stop(t)

	// Acting on the folder group: every file of backup becomes a link of
	// its counterpart in album.
	mustRun(t, db, "link", "--group", key, "--prefer", dir+"/album")
	for _, pair := range [][2]string{{"album/2019/one.jpg", "backup/album/IMG_1.jpg"}, {"album/2019/two.jpg", "backup/album/IMG_2.jpg"},
		{"album/three.jpg", "backup/album/IMG_3.jpg"}} {
		if !sameInode(t, filepath.Join(dir, pair[0]), filepath.Join(dir, pair[1])) {
			t.Errorf("%s is not a link of %s", pair[1], pair[0])
		}
	}
	if sameInode(t, filepath.Join(dir, "album/2019/one.jpg"), filepath.Join(dir, "edited/one.jpg")) {
		t.Error("a folder outside the group was linked")
	}
	if r := dupefs(t, db, "link", "--group", "sha256:"+strings.Repeat("0", 64)); r.code != 3 {
		t.Errorf("link --group of no group: exit %d (%s)", r.code, r.stderr)
	}
}

func readNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
