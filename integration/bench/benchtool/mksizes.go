package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// mksizes writes files whose sizes are all different, as in a folder of
// photos or videos, in folders of 100 (-per-folder; 0: all in one, as a
// phone's camera folder): sparse files (a size and no blocks), so a
// million of them fit anywhere. Every hundredth file takes
// instead one of ten sizes of 4 KiB or so, so some sizes are shared (their
// files read the same: all zeros). It measures the memory of what
// an index keeps per size, which the generated tree (a few thousand
// sizes) does not.
func mksizes(args []string) error {
	fs := flag.NewFlagSet("mksizes", flag.ExitOnError)
	dir := fs.String("dir", "", "where to write the tree")
	files := fs.Int("files", 100000, "how many files")
	per := fs.Int("per-folder", 100, "files in a folder (0: all in one)")
	offset := fs.Int("offset", 0, "start names and sizes after this many files (another run's files then differ)")
	fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("mksizes: -dir is required")
	}
	if *per < 0 {
		return fmt.Errorf("mksizes: -per-folder must be 0 or more")
	}
	cur, name := *dir, "f%07d"
	if *per > 0 {
		name = "f%03d"
	} else if err := os.MkdirAll(cur, 0o755); err != nil {
		return err
	}
	for i := *offset + 1; i <= *offset+*files; i++ {
		if *per > 0 && (i-1)%*per == 0 {
			cur = filepath.Join(*dir, fmt.Sprintf("d%06d", (i-1) / *per))
			if err := os.MkdirAll(cur, 0o755); err != nil {
				return err
			}
		}
		size := int64(8192 + i)
		if i%100 == 0 {
			size = int64(4096 + (i/100)%10)
		}
		j := i - 1
		if *per > 0 {
			j %= *per
		}
		f, err := os.Create(filepath.Join(cur, fmt.Sprintf(name, j)))
		if err != nil {
			return err
		}
		err = f.Truncate(size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
