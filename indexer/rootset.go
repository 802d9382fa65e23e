package indexer

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/dupefs/dupefs/store/naming"
)

// rootSet holds the indexed roots, as stored and with symlinks resolved, to
// check that a file the thumbnailer is about to read lies under one of
// them, both by its path and with its symlinks resolved: a path the index
// holds is only a name, and a symlink swapped in since the scan must not
// lead it to read, and show in /thumbs, a file outside the roots.
type rootSet struct {
	paths []string // as stored: absolute and clean
	real  []string // resolved; "" when the root cannot be resolved now
}

func loadRoots(ctx context.Context, db RootLister) (*rootSet, error) {
	rs, err := db.Roots(ctx)
	if err != nil {
		return nil, err
	}
	s := &rootSet{}
	for _, r := range rs {
		real, err := filepath.EvalSymlinks(r.Path)
		if err != nil {
			real = ""
		}
		s.paths = append(s.paths, r.Path)
		s.real = append(s.real, real)
	}
	return s, nil
}

// resolve returns the real path of p after checking that p lies under a
// root as stored and, with every symlink resolved, under the same root
// resolved.
func (s *rootSet) resolve(p string) (string, error) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return "", fmt.Errorf("%q is not a clean absolute path", p)
	}
	for i, root := range s.paths {
		if !naming.Within(root, p) || s.real[i] == "" {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return "", err
		}
		if !naming.Within(s.real[i], real) {
			return "", fmt.Errorf("%s resolves to %s, outside the indexed root %s", p, real, root)
		}
		return real, nil
	}
	return "", fmt.Errorf("%s lies under no indexed root", p)
}
