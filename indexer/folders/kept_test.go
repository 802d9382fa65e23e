package folders

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/dupefs/dupefs/store"
)

// keptAgrees checks that the pairs the index keeps are those a search of
// every folder finds, with the same counts and lists, and those the oracle
// gives.
func keptAgrees(t *testing.T, db *store.DB, root string) {
	t.Helper()
	ctx := context.Background()
	kept, ok, err := db.Folders().KeptPairs(ctx)
	if err != nil || !ok {
		t.Fatalf("kept pairs: ok %v, %v", ok, err)
	}
	_ = kept
	got, err := Build(ctx, db.Folders(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Build(ctx, db.Folders(), Options{search: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Partial, want.Partial) {
		t.Errorf("kept pairs differ from a search:\n got  %+v\n want %+v", got.Partial, want.Partial)
	}
	agree(t, db, root, 0.5, false)
}

// The kept pairs follow changes made a few at a time, around the folders
// that changed: files edited, added, removed, copied folders made and
// emptied, in two roots.
func TestKeptPairsFollowChanges(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			top := t.TempDir()
			root := filepath.Join(top, "tree")
			files := map[string]string{}
			for i := 0; i < 5; i++ {
				for j := 0; j < 2+rng.Intn(6); j++ {
					s := rng.Intn(20)
					files[fmt.Sprintf("home/d%d/s%d/f%d", i, rng.Intn(2), j)] = body(s, 400+s)
				}
			}
			for p, c := range files {
				if rng.Intn(6) != 0 {
					files["backup/"+p[len("home/"):]] = c
				}
			}
			write(t, root, files)
			db := index(t, root)
			keptAgrees(t, db, root)
			for round := 0; round < 6; round++ {
				var ps []string
				for p := range files {
					ps = append(ps, p)
				}
				sort.Strings(ps)
				for k := 0; k < 1+rng.Intn(3); k++ {
					p := ps[rng.Intn(len(ps))]
					full := filepath.Join(root, p)
					switch rng.Intn(4) {
					case 0: // edited
						files[p] = body(rng.Intn(30), 400+rng.Intn(30))
						os.WriteFile(full, []byte(files[p]), 0o644)
					case 1: // removed
						delete(files, p)
						os.Remove(full)
					case 2: // a copy of another file beside it
						q := filepath.Join(filepath.Dir(p), fmt.Sprintf("n%d", rng.Intn(1000)))
						files[q] = files[ps[rng.Intn(len(ps))]]
						os.WriteFile(filepath.Join(root, q), []byte(files[q]), 0o644)
					default: // a folder copied somewhere else
						src := filepath.Dir(p)
						dst := fmt.Sprintf("backup/c%d", rng.Intn(100))
						for q, c := range files {
							if filepath.Dir(q) == src {
								files[dst+"/"+filepath.Base(q)] = c
								os.MkdirAll(filepath.Join(root, dst), 0o755)
								os.WriteFile(filepath.Join(root, dst, filepath.Base(q)), []byte(c), 0o644)
							}
						}
					}
				}
				reindex(t, db)
				keptAgrees(t, db, root)
			}
		})
	}
}
