package main

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
)

// mkfolders writes a tree of about n folders for the folder bench:
// projects of 1 to 12 folders (up to 3 deep) of 0 to 4 small files each,
// every project with the same LICENSE (a content in thousands of folders);
// a tenth of the projects copied whole under backup/ (some files renamed),
// a tenth copied with a third of their files changed under edited/.
func mkfolders(args []string) error {
	fs := flag.NewFlagSet("mkfolders", flag.ExitOnError)
	dir := fs.String("dir", "", "where to write the tree")
	n := fs.Int("folders", 100000, "about how many folders")
	seed := fs.Int64("seed", 1, "random seed")
	fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("mkfolders: -dir is required")
	}
	rnd := rand.New(rand.NewSource(*seed))
	licence := []byte(strings.Repeat("Permission is hereby granted, free of charge. ", 20))
	content := func() []byte {
		b := make([]byte, 100+rnd.Intn(1900))
		rnd.Read(b)
		return b
	}
	type file struct {
		rel  string
		data []byte
	}
	write := func(root string, files []file, rename, change float64) error {
		for _, f := range files {
			rel, data := f.rel, f.data
			if rnd.Float64() < rename {
				rel = filepath.Join(filepath.Dir(rel), "renamed-"+filepath.Base(rel))
			}
			if rnd.Float64() < change {
				data = content()
			}
			p := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	folders := 0
	for p := 0; folders < *n; p++ {
		name := fmt.Sprintf("p%06d", p)
		group := fmt.Sprintf("g%03d", p%300)
		files := []file{{"LICENSE", licence}}
		dirs := []string{"."}
		for i := rnd.Intn(12); i > 0; i-- {
			parent := dirs[rnd.Intn(len(dirs))]
			if strings.Count(parent, "/") >= 2 {
				parent = "."
			}
			dirs = append(dirs, filepath.Join(parent, fmt.Sprintf("d%d", len(dirs))))
		}
		for _, d := range dirs {
			for i := rnd.Intn(5); i > 0; i-- {
				files = append(files, file{filepath.Join(d, fmt.Sprintf("f%d.dat", i)), content()})
			}
		}
		if err := write(filepath.Join(*dir, "projects", group, name), files, 0, 0); err != nil {
			return err
		}
		folders += len(dirs)
		switch r := rnd.Intn(10); r {
		case 0:
			err := write(filepath.Join(*dir, "backup", group, name), files, 0.3, 0)
			if err != nil {
				return err
			}
			folders += len(dirs)
		case 1:
			err := write(filepath.Join(*dir, "edited", group, name), files, 0, 0.33)
			if err != nil {
				return err
			}
			folders += len(dirs)
		}
	}
	return nil
}
