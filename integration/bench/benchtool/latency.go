package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// latency measures how long a change on disk takes to show in a mounted
// view: n times, it copies -seed to a new name under -tree and waits until
// the seed's group folder in -mnt lists the new name, then removes it and
// waits until the name is gone. It prints the median and p99 of each, in
// milliseconds.
func latency(args []string) error {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	mnt := fs.String("mnt", "", "the mount point")
	tree := fs.String("tree", "", "a folder under a root of the mount")
	seed := fs.String("seed", "", "a file under the root that has a copy already (its group exists)")
	group := fs.String("group", "", "the seed's group folder, relative to the mount (by-hash/<key>)")
	n := fs.Int("n", 200, "how many changes")
	fs.Parse(args)
	if *mnt == "" || *tree == "" || *seed == "" || *group == "" {
		return fmt.Errorf("latency: -mnt, -tree, -seed and -group are required")
	}
	data, err := os.ReadFile(*seed)
	if err != nil {
		return err
	}
	dir := filepath.Join(*mnt, *group)
	listed := func(name string) bool {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return false
		}
		for _, e := range ents {
			if e.Name() == name {
				return true
			}
		}
		return false
	}
	wait := func(cond func() bool) (time.Duration, error) {
		start := time.Now()
		for !cond() {
			if time.Since(start) > 30*time.Second {
				return 0, fmt.Errorf("latency: a change did not show in 30 s")
			}
			time.Sleep(2 * time.Millisecond)
		}
		return time.Since(start), nil
	}
	var add, del []time.Duration
	for i := 0; i < *n; i++ {
		name := fmt.Sprintf("latency-%04d", i)
		p := filepath.Join(*tree, name)
		start := time.Now()
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		if _, err := wait(func() bool { return listed(name) }); err != nil {
			return err
		}
		add = append(add, time.Since(start))
		start = time.Now()
		if err := os.Remove(p); err != nil {
			return err
		}
		if _, err := wait(func() bool { return !listed(name) }); err != nil {
			return err
		}
		del = append(del, time.Since(start))
	}
	pct := func(ds []time.Duration, p float64) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds()) / 1000
	}
	fmt.Printf("%.0f %.0f %.0f %.0f\n", pct(add, 0.5), pct(add, 0.99), pct(del, 0.5), pct(del, 0.99))
	return nil
}

// appear measures how long another process's commit takes to show in a
// mounted view: it runs the command after --, and from the moment it exits
// lists -dir every -every until -name is there. It prints the milliseconds
// from the exit to the listing that held the name, and the seconds the
// command took.
func appear(args []string) error {
	fs := flag.NewFlagSet("appear", flag.ExitOnError)
	dir := fs.String("dir", "", "the folder of the view to list (MOUNT/by-hash)")
	name := fs.String("name", "", "the entry the command's commit adds to it")
	every := fs.Duration("every", 10*time.Millisecond, "how often to list the folder")
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait after the command")
	fs.Parse(args)
	cmdArgs := fs.Args()
	if *dir == "" || *name == "" || len(cmdArgs) == 0 {
		return fmt.Errorf("appear: -dir, -name and a command after them are required")
	}
	// The folder is there all along: an error listing it (the view
	// ended) ends the wait.
	listed := func() (bool, error) {
		ents, err := os.ReadDir(*dir)
		if err != nil {
			return false, fmt.Errorf("appear: %w", err)
		}
		for _, e := range ents {
			if e.Name() == *name {
				return true, nil
			}
		}
		return false, nil
	}
	ok, err := listed()
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("appear: %s is in %s before the command ran", *name, *dir)
	}
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	started := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("appear: %s: %w\n%s", strings.Join(cmdArgs, " "), err, stderr.String())
	}
	exited := time.Now()
	for {
		ok, err = listed()
		if err != nil {
			return err
		}
		if ok {
			break
		}
		if time.Since(exited) > *timeout {
			return fmt.Errorf("appear: %s not in %s %s after the command ended", *name, *dir, *timeout)
		}
		time.Sleep(*every)
	}
	fmt.Printf("%.1f %.3f\n", float64(time.Since(exited).Microseconds())/1000, exited.Sub(started).Seconds())
	return nil
}
