package indexer

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dupefs/dupefs/store"
)

// listings snapshots every folder's listing (names, sizes, times, inodes):
// what events would name as changed is what differs between two.
func listings(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		ents, _ := os.ReadDir(p)
		var b strings.Builder
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil {
				continue
			}
			fmt.Fprintf(&b, "%s %d %d %v;", e.Name(), fi.Size(), fi.ModTime().UnixNano(), fi.Sys())
		}
		out[p] = b.String()
		return nil
	})
	return out
}

// TestTargetedScansFollowChanges changes a tree (files created, deleted,
// renamed, rewritten, linked; folders made, removed and moved), then
// rescans only the folders whose listing changed, as the watcher would, and
// checks the index against a fresh index of the final tree, for 12 seeds.
func TestTargetedScansFollowChanges(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			m := newMutator(e.dir, seed)
			for i := 0; i < 80; i++ {
				m.create()
			}
			e.addRoot(store.RootSpec{})
			e.run()
			roots, _ := e.db.Files().Roots(ctx)
			for round := 0; round < 3; round++ {
				before := listings(t, e.dir)
				for i := 0; i < 25; i++ {
					m.step()
				}
				// Folder-level changes: a new nested folder with copies, a
				// folder removed, a folder moved to another parent.
				deep := filepath.Join(e.dir, fmt.Sprintf("d%d/new%d/deeper", m.rnd.Intn(6), round))
				os.MkdirAll(deep, 0o755)
				for i := 0; i < 3; i++ {
					os.WriteFile(filepath.Join(deep, fmt.Sprint("c", i)), m.contents[m.rnd.Intn(len(m.contents))], 0o644)
				}
				switch round {
				case 1:
					os.RemoveAll(filepath.Join(e.dir, fmt.Sprintf("d%d", m.rnd.Intn(6))))
				case 2:
					os.Rename(filepath.Dir(deep), filepath.Join(e.dir, fmt.Sprintf("d%d/moved%d", m.rnd.Intn(6), round)))
				}
				after := listings(t, e.dir)
				var targets []string
				for p, l := range after {
					if before[p] != l {
						targets = append(targets, p)
					}
				}
				for p := range before {
					if _, ok := after[p]; !ok {
						targets = append(targets, p) // gone: its parent changed too
					}
				}
				sort.Strings(targets)
				ix := New(IndexOf(e.db), e.config())
				queued, err := ix.Rescan(ctx, roots[0].ID, targets)
				if err != nil || !queued {
					t.Fatalf("rescan: %v %v", queued, err)
				}
				if err := ix.Drain(ctx); err != nil {
					t.Fatal(err)
				}
				e.settled()
				e.matchesFresh()
				e.verifyFolderSigs()
			}
			// A targeted scan leaves the root's last full scan as it was.
			r, _ := e.db.Files().Root(ctx, roots[0].ID)
			if r.FileCount != roots[0].FileCount || !r.LastScanAt.Equal(roots[0].LastScanAt) {
				t.Errorf("root totals moved: %+v, were %+v", r, roots[0])
			}
		})
	}
}
