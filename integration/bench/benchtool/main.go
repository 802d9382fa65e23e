package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "mktree":
		err = mktree(os.Args[2:])
	case "mkphotos":
		err = mkphotos(os.Args[2:])
	case "mkgroups":
		err = mkgroups(os.Args[2:])
	case "mksizes":
		err = mksizes(os.Args[2:])
	case "mkfolders":
		err = mkfolders(os.Args[2:])
	case "latency":
		err = latency(os.Args[2:])
	case "appear":
		err = appear(os.Args[2:])
	case "churnprep":
		err = churnPrep(os.Args[2:])
	case "churn":
		err = churn(os.Args[2:])
	case "settle":
		err = settle(os.Args[2:])
	case "converged":
		err = converged(os.Args[2:])
	case "compare":
		err = compare(os.Args[2:])
	case "median":
		err = median(os.Args[2:])
	case "statwalk":
		err = statwalk(os.Args[2:])
	case "sqlfloor":
		err = sqlfloor(os.Args[2:])
	case "fusefloor":
		err = fusefloor(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchtool mktree -dir D -files N [-seed S] [-avg BYTES] | mkphotos -dir D [-files N] [-edits N] |\n"+
		"       mkgroups -dir D [-groups N] [-copies N] | mksizes -dir D [-files N] | mkfolders -dir D [-folders N] | compare A B | median V... |\n"+
		"       appear -dir D -name N [-every DUR] -- CMD... |\n"+
		"       churnprep -dir D | churn -dir D -mnt M [-rate N] [-secs S] [-probes N] |\n"+
		"       settle -db INDEX -out LOG [-pid P] [-quiet D] | converged -log LOG -since T -fresh INDEX |\n"+
		"       statwalk -dir D [-workers N] | fusefloor -tree T -mnt M | sqlfloor -from INDEX -db NEW [-times FILE]")
	os.Exit(2)
}

// mktree writes a tree that looks like a home folder: folders of 1 to 200
// files, sizes spread from a few bytes to a few MiB (median a few KiB),
// about a fifth of the files copies of others (in other folders, some as
// hard links), some empty files. The same arguments always give the same
// tree.
func mktree(args []string) error {
	fs := flag.NewFlagSet("mktree", flag.ExitOnError)
	dir := fs.String("dir", "", "where to write the tree")
	files := fs.Int("files", 100000, "how many files")
	seed := fs.Int64("seed", 1, "random seed")
	avg := fs.Int("avg", 8192, "mean size of a file in bytes")
	fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("mktree: -dir is required")
	}
	rnd := rand.New(rand.NewSource(*seed))
	size := func() int {
		// Log-normal-ish: mostly small, a long tail.
		f := rnd.ExpFloat64() * rnd.ExpFloat64()
		n := int(f * float64(*avg) / 2)
		if rnd.Intn(1000) == 0 {
			n += 1 << 20 * (1 + rnd.Intn(4))
		}
		return n
	}
	type orig struct {
		path string
		data []byte
	}
	var pool []orig // recent files to copy
	buf := make([]byte, 8<<20)
	folder, inFolder, want := 0, 0, 0
	cur := ""
	for i := 0; i < *files; i++ {
		if inFolder >= want {
			folder++
			inFolder, want = 0, 1+rnd.Intn(200)
			cur = filepath.Join(*dir, fmt.Sprintf("g%03d", folder%997), fmt.Sprintf("f%06d", folder))
			if err := os.MkdirAll(cur, 0o755); err != nil {
				return err
			}
		}
		inFolder++
		p := filepath.Join(cur, fmt.Sprintf("file%07d.dat", i))
		switch r := rnd.Intn(100); {
		case r < 2:
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return err
			}
		case r < 20 && len(pool) > 0:
			o := pool[rnd.Intn(len(pool))]
			if rnd.Intn(10) == 0 {
				if err := os.Link(o.path, p); err != nil {
					return err
				}
			} else if err := os.WriteFile(p, o.data, 0o644); err != nil {
				return err
			}
		default:
			n := min(size(), len(buf))
			data := buf[:n]
			rnd.Read(data)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				return err
			}
			if n < 256<<10 && rnd.Intn(4) == 0 {
				o := orig{path: p, data: append([]byte(nil), data...)}
				if len(pool) < 2000 {
					pool = append(pool, o)
				} else {
					pool[rnd.Intn(len(pool))] = o
				}
			}
		}
	}
	return nil
}

// mkgroups writes groups copies of each of n small distinct contents, in
// folders of 1000 files: an index of n groups for the mount bench. Sizes
// spread over a few thousand values, so /by-size has many folders too.
func mkgroups(args []string) error {
	fs := flag.NewFlagSet("mkgroups", flag.ExitOnError)
	dir := fs.String("dir", "", "where to write the tree")
	groups := fs.Int("groups", 100000, "how many groups")
	copies := fs.Int("copies", 3, "copies of each")
	fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("mkgroups: -dir is required")
	}
	n := 0
	made := ""
	for c := 0; c < *copies; c++ {
		for g := 0; g < *groups; g++ {
			// Folders of 1000 files, numbered across the copies: a copy's
			// first folder may start mid-thousand.
			d := filepath.Join(*dir, fmt.Sprintf("c%d", c), fmt.Sprintf("d%05d", n/1000))
			if d != made {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
				made = d
			}
			p := filepath.Join(d, fmt.Sprintf("photo-%06d.jpg", g))
			body := fmt.Sprintf("group %d\n%s", g, strings.Repeat("x", g%4000))
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				return err
			}
			n++
		}
	}
	return nil
}

// mkphotos writes a photo-like tree: n files of 2 to 8 MB in folders of
// about 100, a fifth of them copies of earlier ones (some hard links), and
// edits: files of the same size as another that differ from it only in a
// few bytes in the middle, which no prefix or suffix tells apart.
func mkphotos(args []string) error {
	fs := flag.NewFlagSet("mkphotos", flag.ExitOnError)
	dir := fs.String("dir", "", "where to write the tree")
	n := fs.Int("files", 2200, "how many files")
	edits := fs.Int("edits", 200, "same-size edits that differ only in the middle")
	seed := fs.Int64("seed", 1, "random seed")
	fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("mkphotos: -dir is required")
	}
	rnd := rand.New(rand.NewSource(*seed))
	type orig struct {
		path string
		size int
		seed int64
	}
	var origs []orig
	buf := make([]byte, 8<<20)
	fill := func(size int, seed int64) []byte {
		r := rand.New(rand.NewSource(seed))
		r.Read(buf[:size])
		return buf[:size]
	}
	for i := 0; i < *n; i++ {
		folder := filepath.Join(*dir, fmt.Sprintf("%04d", 2000+i/500), fmt.Sprintf("album-%03d", i/100))
		if err := os.MkdirAll(folder, 0o755); err != nil {
			return err
		}
		p := filepath.Join(folder, fmt.Sprintf("IMG_%05d.jpg", i))
		switch r := rnd.Intn(*n); {
		case len(origs) > 0 && r < *n/5:
			o := origs[rnd.Intn(len(origs))]
			if rnd.Intn(10) == 0 {
				if err := os.Link(o.path, p); err != nil {
					return err
				}
				continue
			}
			if err := os.WriteFile(p, fill(o.size, o.seed), 0o644); err != nil {
				return err
			}
		case len(origs) > 0 && r < *n/5+*edits:
			o := origs[rnd.Intn(len(origs))]
			data := fill(o.size, o.seed)
			mid := o.size / 2
			for k := 0; k < 16; k++ {
				data[mid+k] ^= 0x5a
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				return err
			}
		default:
			o := orig{path: p, size: 2<<20 + rnd.Intn(6<<20), seed: rnd.Int63()}
			if err := os.WriteFile(p, fill(o.size, o.seed), 0o644); err != nil {
				return err
			}
			origs = append(origs, o)
		}
	}
	return nil
}

// inodeGroups reads an fdupes-format report and returns its groups as sets
// of inodes (dev:ino), each set sorted and joined, so reports that list
// hard links differently compare equal. Groups of a single inode are
// dropped (some tools list hard links as duplicates).
func inodeGroups(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur []string
	flush := func() {
		set := map[string]bool{}
		for _, p := range cur {
			var st syscall.Stat_t
			if err := syscall.Lstat(p, &st); err == nil {
				set[fmt.Sprintf("%d:%d", st.Dev, st.Ino)] = true
			}
		}
		if len(set) >= 2 {
			keys := make([]string, 0, len(set))
			for k := range set {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			out[strings.Join(keys, ",")] = true
		}
		cur = cur[:0]
	}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return out, sc.Err()
}

func compare(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("compare A B")
	}
	a, err := inodeGroups(args[0])
	if err != nil {
		return err
	}
	b, err := inodeGroups(args[1])
	if err != nil {
		return err
	}
	onlyA, onlyB := 0, 0
	for k := range a {
		if !b[k] {
			onlyA++
		}
	}
	for k := range b {
		if !a[k] {
			onlyB++
		}
	}
	fmt.Printf("%d groups vs %d groups; %d only in the first, %d only in the second\n", len(a), len(b), onlyA, onlyB)
	if onlyA+onlyB > 0 {
		return fmt.Errorf("the duplicate sets differ")
	}
	return nil
}

func median(args []string) error {
	var vs []float64
	for _, a := range args {
		v, err := strconv.ParseFloat(a, 64)
		if err != nil {
			return err
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return fmt.Errorf("median of nothing")
	}
	sort.Float64s(vs)
	m := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		m = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	fmt.Printf("%g\n", m)
	return nil
}
