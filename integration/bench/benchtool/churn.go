package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// The churn tree: churnFolders folders of churnFiles files each to start
// with, a tenth of the contents copies of others, and probe, a file of its
// own content with one copy, whose group folder the probes watch in the
// mount.
const (
	churnFolders = 50
	churnFiles   = 40
)

// churnPrep writes the tree churn starts from.
//
//	benchtool churnprep -dir D
func churnPrep(args []string) error {
	fs := flag.NewFlagSet("churnprep", flag.ExitOnError)
	dir := fs.String("dir", "", "where to write the tree")
	fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("churnprep: -dir is required")
	}
	c := newChurner(*dir, 1)
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	probe := make([]byte, 100_000)
	c.rnd.Read(probe)
	if err := os.WriteFile(filepath.Join(*dir, "probe"), probe, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "probe-copy"), probe, 0o644); err != nil {
		return err
	}
	for d := 0; d < churnFolders; d++ {
		if err := c.mkdir(); err != nil {
			return err
		}
	}
	for i := 0; i < churnFolders*churnFiles; i++ {
		if err := c.create(); err != nil {
			return err
		}
	}
	return nil
}

// churner makes random changes in a tree and remembers what is in it.
type churner struct {
	dir     string
	rnd     *rand.Rand
	folders []string
	files   []string
	pool    [][]byte // contents new files copy
	n       int      // names made so far
	// probes are the paths of the probe files: no folder holding one is
	// moved or removed.
	probes map[string]bool
}

func newChurner(dir string, seed int64) *churner {
	return &churner{dir: dir, rnd: rand.New(rand.NewSource(seed)), probes: map[string]bool{}}
}

// load reads back the tree churnprep wrote (the probe files aside).
func (c *churner) load() error {
	return filepath.WalkDir(c.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case p == c.dir:
		case d.IsDir():
			c.folders = append(c.folders, p)
		case filepath.Dir(p) != c.dir:
			c.files = append(c.files, p)
		}
		return nil
	})
}

func (c *churner) name(prefix string) string {
	c.n++
	return fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), c.n)
}

func (c *churner) content() []byte {
	if len(c.pool) > 0 && c.rnd.Intn(10) == 0 {
		return c.pool[c.rnd.Intn(len(c.pool))]
	}
	b := make([]byte, 1+c.rnd.Intn(32<<10))
	c.rnd.Read(b)
	if len(c.pool) < 200 {
		c.pool = append(c.pool, b)
	} else if c.rnd.Intn(20) == 0 {
		c.pool[c.rnd.Intn(len(c.pool))] = b
	}
	return b
}

func (c *churner) folder() string { return c.folders[c.rnd.Intn(len(c.folders))] }

func (c *churner) mkdir() error {
	parent := c.dir
	if len(c.folders) > 0 && c.rnd.Intn(3) == 0 {
		parent = c.folder()
	}
	p := filepath.Join(parent, c.name("d"))
	if err := os.Mkdir(p, 0o755); err != nil {
		return err
	}
	c.folders = append(c.folders, p)
	return nil
}

func (c *churner) create() error {
	p := filepath.Join(c.folder(), c.name("f"))
	if err := os.WriteFile(p, c.content(), 0o644); err != nil {
		return err
	}
	c.files = append(c.files, p)
	return nil
}

// pick takes a random file off the list.
func (c *churner) pick() (string, bool) {
	if len(c.files) == 0 {
		return "", false
	}
	i := c.rnd.Intn(len(c.files))
	p := c.files[i]
	c.files[i] = c.files[len(c.files)-1]
	c.files = c.files[:len(c.files)-1]
	return p, true
}

// step makes one random change: a file made, rewritten, moved or deleted
// (about as many made as deleted), now and then a folder made, moved or
// removed with what is in it.
func (c *churner) step() error {
	r := c.rnd.Intn(1000)
	switch {
	case r < 300 || len(c.files) < 100:
		return c.create()
	case r < 500:
		p, ok := c.pick()
		if !ok {
			return nil
		}
		c.files = append(c.files, p)
		return os.WriteFile(p, c.content(), 0o644)
	case r < 700:
		p, ok := c.pick()
		if !ok {
			return nil
		}
		q := filepath.Join(c.folder(), c.name("m"))
		c.files = append(c.files, q)
		return os.Rename(p, q)
	case r < 960:
		p, ok := c.pick()
		if !ok {
			return nil
		}
		return os.Remove(p)
	case r < 980:
		return c.mkdir()
	case r < 990 && len(c.folders) > 20:
		return c.moveFolder()
	case len(c.folders) > 20:
		return c.removeFolder()
	}
	return nil
}

// under reports whether p is dir or below it.
func under(dir, p string) bool {
	return p == dir || len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/'
}

// looseFolder is a random folder that holds no probe file ("" if the
// few tried all did).
func (c *churner) looseFolder() string {
	for try := 0; try < 5; try++ {
		dir := c.folder()
		held := false
		for p := range c.probes {
			held = held || under(dir, p)
		}
		if !held {
			return dir
		}
	}
	return ""
}

// moveFolder moves a folder under the top of the tree, with its files.
func (c *churner) moveFolder() error {
	from := c.looseFolder()
	if from == "" {
		return nil
	}
	to := filepath.Join(c.dir, c.name("d"))
	if err := os.Rename(from, to); err != nil {
		return err
	}
	for i, p := range c.folders {
		if under(from, p) {
			c.folders[i] = to + p[len(from):]
		}
	}
	for i, p := range c.files {
		if under(from, p) {
			c.files[i] = to + p[len(from):]
		}
	}
	return nil
}

func (c *churner) removeFolder() error {
	dir := c.looseFolder()
	if dir == "" {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	c.folders = slices.DeleteFunc(c.folders, func(p string) bool { return under(dir, p) })
	c.files = slices.DeleteFunc(c.files, func(p string) bool { return under(dir, p) })
	return nil
}

// probe is one change whose arrival in the view is timed: name should be
// listed in the probe's group folder (or gone from it, when gone).
type probe struct {
	name  string
	gone  bool
	start time.Time
}

// churn makes -rate random changes a second under -dir for -secs seconds
// (churnprep wrote the tree, and a mount of it is up to date), and times
// how long some take to show in the mount's view: -probes a second of the
// changes are copies of the probe file made, renamed or deleted in a
// random folder of the tree, each followed in the probe's group folder
// (listed every few milliseconds) until the view shows it. It prints the
// number of changes made, then the median and p99 of the probes in
// milliseconds, and how many probes there were.
//
//	benchtool churn -dir D -mnt M [-rate 300] [-secs 60] [-probes 5]
func churn(args []string) error {
	fs := flag.NewFlagSet("churn", flag.ExitOnError)
	dir := fs.String("dir", "", "the tree churnprep wrote, under a root of the mount")
	mnt := fs.String("mnt", "", "the mount point")
	rate := fs.Int("rate", 300, "changes a second")
	secs := fs.Int("secs", 60, "for how long")
	probes := fs.Int("probes", 5, "of the changes each second, how many are probes")
	fs.Parse(args)
	if *dir == "" || *mnt == "" || *rate <= 0 || *probes <= 0 || *probes > *rate {
		return fmt.Errorf("churn: -dir and -mnt are required, and 0 < -probes <= -rate")
	}
	probeData, err := os.ReadFile(filepath.Join(*dir, "probe"))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(probeData)
	group := filepath.Join(*mnt, "by-hash", "sha256:"+hex.EncodeToString(sum[:]))
	if _, err := os.Stat(group); err != nil {
		return fmt.Errorf("churn: the probe's group is not in the view: %w", err)
	}
	c := newChurner(*dir, time.Now().UnixNano())
	if err := c.load(); err != nil {
		return err
	}
	w := newProbeWatch(group)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { w.run(stop); close(done) }()

	// The probe files: each has one change in flight at a time.
	type probeFile struct{ path, name string }
	var live []probeFile
	probeStep := func() error {
		// Make a new one, or move or delete one whose last change shows.
		var ready []int
		for i, pf := range live {
			if w.settled(pf.name) {
				ready = append(ready, i)
			}
		}
		if len(ready) == 0 || len(live) < 10 && c.rnd.Intn(2) == 0 {
			name := c.name("probe")
			p := filepath.Join(c.folder(), name)
			w.expect(name, false)
			if err := os.WriteFile(p, probeData, 0o644); err != nil {
				return err
			}
			live = append(live, probeFile{p, name})
			c.probes[p] = true
			return nil
		}
		i := ready[c.rnd.Intn(len(ready))]
		pf := live[i]
		if c.rnd.Intn(2) == 0 {
			name := c.name("probe")
			q := filepath.Join(c.folder(), name)
			w.expect(name, false)
			if err := os.Rename(pf.path, q); err != nil {
				return err
			}
			live[i] = probeFile{q, name}
			delete(c.probes, pf.path)
			c.probes[q] = true
			return nil
		}
		w.expect(pf.name, true)
		live = slices.Delete(live, i, i+1)
		delete(c.probes, pf.path)
		return os.Remove(pf.path)
	}

	start := time.Now()
	every := time.Second / time.Duration(*rate)
	probeEvery := *rate / *probes
	made := 0
	for i := 0; time.Since(start) < time.Duration(*secs)*time.Second; i++ {
		if d := time.Until(start.Add(time.Duration(i) * every)); d > 0 {
			time.Sleep(d)
		}
		var err error
		if i%probeEvery == 0 {
			err = probeStep()
		} else {
			err = c.step()
		}
		if err != nil {
			close(stop)
			<-done
			return fmt.Errorf("churn: change %d: %w", i, err)
		}
		made++
	}
	took := time.Since(start)
	// The last probes: up to 60 s for them to show.
	for end := time.Now().Add(60 * time.Second); !w.allSettled() && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	<-done
	lat, missed := w.results()
	if len(lat) == 0 {
		return fmt.Errorf("churn: no probe showed in the view")
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	fmt.Printf("%d %.1f %.0f %.0f %d %d\n", made, float64(made)/took.Seconds(), pct(0.5), pct(0.99), len(lat), missed)
	return nil
}

// probeWatch lists a group folder of the view over and over, and times
// each probe from when it was expected until the listing shows it.
type probeWatch struct {
	dir  string
	mu   sync.Mutex
	want map[string]probe // name → what the view must show
	lat  []time.Duration
}

func newProbeWatch(dir string) *probeWatch {
	return &probeWatch{dir: dir, want: map[string]probe{}}
}

func (w *probeWatch) expect(name string, gone bool) {
	w.mu.Lock()
	w.want[name] = probe{name: name, gone: gone, start: time.Now()}
	w.mu.Unlock()
}

func (w *probeWatch) settled(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, waiting := w.want[name]
	return !waiting
}

func (w *probeWatch) allSettled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.want) == 0
}

func (w *probeWatch) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		ents, err := os.ReadDir(w.dir)
		now := time.Now()
		if err == nil {
			listed := make(map[string]bool, len(ents))
			for _, e := range ents {
				listed[e.Name()] = true
			}
			w.mu.Lock()
			for name, p := range w.want {
				if listed[name] != p.gone {
					w.lat = append(w.lat, now.Sub(p.start))
					delete(w.want, name)
				}
			}
			w.mu.Unlock()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// results are the probes' times, and how many never showed.
func (w *probeWatch) results() ([]time.Duration, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.lat), len(w.want)
}
