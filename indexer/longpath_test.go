package indexer

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/store"
)

// A folder whose path is longer than a PostgreSQL index takes is left out
// with a note, and so is everything below it; the rest of the tree is
// indexed, as it all is on SQLite. (Before, every write of the scan that
// met it failed, and the roots after it were never scanned.)
func TestLongFolderPathsLeftOutOnPostgres(t *testing.T) {
	bothEngines(t, func(t *testing.T, e *env) {
		deep := "short"
		for i := range 6 {
			deep = filepath.Join(deep, strings.Repeat(string(rune('a'+i)), 250))
		}
		bytes := filepath.Join("odd", strings.Repeat("\xff", 200), strings.Repeat("\xfe", 200)) // 1600 bytes escaped
		tree(t, e.dir, map[string]string{
			filepath.Join(deep, "f"):  "same",
			filepath.Join(bytes, "g"): "same",
			"short/f":                 "same",
			"top":                     "same",
		})
		e.addRoot(store.RootSpec{})
		e.run()
		onPG := e.db.MaxFolderPath() > 0
		var notes int
		for _, w := range e.warn {
			if strings.Contains(w, "path longer than a PostgreSQL index takes") {
				notes++
			}
		}
		want := []string{filepath.Join(deep, "f"), filepath.Join(bytes, "g"), "short/f", "top"}
		if onPG {
			want, notes = []string{"short/f", "top"}, notes-2
		}
		if notes != 0 {
			t.Errorf("warnings %q", e.warn)
		}
		e.wantGroups(want)
		if tot, err := e.db.Totals(context.Background()); err != nil || tot.Files != int64(len(want)) {
			t.Errorf("%d files (%v), want %d", tot.Files, err, len(want))
		}
	})
}
