package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dupefs/dupefs/store"
)

// settle follows an index that a mount keeps up to date: every -every it
// reads the index's totals when it changed (read-only, beside the mount,
// so the mount does no work for it) and appends a line to -out:
//
//	unix-time files folders groups group-files bytes state-word rss-kb cpu-s
//
// (rss-kb and cpu-s, user and system seconds so far, of -pid; 0 without). It returns once the index has been up to
// date with the same totals for -quiet while -pid was idle (idleShare), or
// after -timeout (an error).
//
//	benchtool settle -db INDEX -out LOG [-pid P] [-every 250ms] [-quiet 10s] [-timeout 15m]
func settle(args []string) error {
	fs := flag.NewFlagSet("settle", flag.ExitOnError)
	dbPath := fs.String("db", "", "the index")
	out := fs.String("out", "", "the log to append to")
	pid := fs.Int("pid", 0, "a process whose RSS is logged too")
	every := fs.Duration("every", 250*time.Millisecond, "how often")
	quiet := fs.Duration("quiet", 10*time.Second, "up to date and unchanged this long: settled")
	timeout := fs.Duration("timeout", 15*time.Minute, "give up after")
	fs.Parse(args)
	if *dbPath == "" || *out == "" {
		return fmt.Errorf("settle: -db and -out are required")
	}
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{Path: *dbPath, MustExist: true, ReadOnly: true, ReadConns: 2})
	if err != nil {
		return err
	}
	defer db.Close()
	// The totals are read again only after a commit: reading them costs
	// a pass over the files.
	w, err := db.View().NewWatcher(ctx)
	if err != nil {
		return err
	}
	defer w.Close()
	f, err := os.OpenFile(*out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	start := time.Now()
	var last string
	var since time.Time
	var sinceCPU float64
	var t store.Totals
	for i := 0; ; i++ {
		changed, err := w.Changed(ctx)
		if err == nil && (changed || i == 0) {
			t, err = db.Totals(ctx)
		}
		now := time.Now()
		if err != nil {
			return fmt.Errorf("settle: %w", err)
		}
		key := totalsKey(t)
		cpu := cpuSecs(*pid)
		fmt.Fprintf(f, "%.3f %s %s %d %.2f\n", float64(now.UnixNano())/1e9, key, stateWord(t.State), rssKB(*pid), cpu)
		switch {
		case key != last || t.State != store.StateUpToDate:
			last, since, sinceCPU = key, now, cpu
		case cpu-sinceCPU > idleShare*now.Sub(since).Seconds():
			// Busy still, though the totals stand (a long fold of the
			// folders changes none of them): not quiet yet.
			since, sinceCPU = now, cpu
		case now.Sub(since) >= *quiet:
			return nil
		}
		if now.Sub(start) > *timeout {
			return fmt.Errorf("settle: not settled after %s", *timeout)
		}
		time.Sleep(*every)
	}
}

// idleShare: a process (-pid) that used more than this share of a CPU
// since the totals last changed is still at work, and the index not
// settled, however long the totals stand.
const idleShare = 0.1

// totalsKey is what two indexes of the same tree agree on.
func totalsKey(t store.Totals) string {
	return fmt.Sprintf("%d %d %d %d %d", t.Files, t.Folders, t.Groups, t.GroupFiles, t.Bytes)
}

func stateWord(s string) string { return strings.ReplaceAll(s, " ", "-") }

// rssKB is VmRSS of a process in KiB (0: none or gone).
func rssKB(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// cpuSecs is the user and system CPU seconds of a process so far (0:
// none or gone).
func cpuSecs(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command (which may hold spaces) are after the
	// last ')': utime and stime are the 12th and 13th of them.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100 // USER_HZ, 100 on Linux
}

// converged reads a settle log and a fresh index of the same tree, and
// prints how many seconds after -since the index was up to date and equal
// to the fresh one for good (to the end of the log), or -1 when it never
// was by the end; then the CPU seconds the mount spent from -since to then
// (settle's -pid; 0 without).
//
//	benchtool converged -log LOG -since UNIX-TIME -fresh INDEX
func converged(args []string) error {
	fs := flag.NewFlagSet("converged", flag.ExitOnError)
	logPath := fs.String("log", "", "a settle log")
	since := fs.Float64("since", 0, "when the changes ended (unix time)")
	freshPath := fs.String("fresh", "", "a fresh index of the tree")
	fs.Parse(args)
	if *logPath == "" || *freshPath == "" {
		return fmt.Errorf("converged: -log and -fresh are required")
	}
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{Path: *freshPath, MustExist: true, ReadOnly: true})
	if err != nil {
		return err
	}
	t, err := db.Totals(ctx)
	db.Close()
	if err != nil {
		return err
	}
	want := totalsKey(t) + " " + stateWord(store.StateUpToDate)
	f, err := os.Open(*logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	at := -1.0               // when the current run of equal lines began
	cpu0, cpuAt := -1.0, 0.0 // the mount's CPU at -since, and at "at"
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		ts, err := strconv.ParseFloat(fields[0], 64)
		if err != nil || ts < *since {
			continue
		}
		cpu := 0.0
		if len(fields) >= 9 {
			cpu, _ = strconv.ParseFloat(fields[8], 64)
		}
		if cpu0 < 0 {
			cpu0 = cpu
		}
		if strings.Join(fields[1:7], " ") == want {
			if at < 0 {
				at, cpuAt = ts, cpu
			}
		} else {
			at = -1
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if at < 0 {
		fmt.Println("-1 0")
		return nil
	}
	fmt.Printf("%.1f %.2f\n", at-*since, max(0, cpuAt-cpu0))
	return nil
}
