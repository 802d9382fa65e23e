package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// statusOptions are the flags of `dupefs status`.
type statusOptions struct{ JSON bool }

// jobsOptions are the flags of `dupefs jobs`.
type jobsOptions struct {
	JSON  bool
	Limit int // 0: all
}

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show progress and totals of the index",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			return runStatus(c.Context, globalsFrom(c), statusOptions{JSON: c.Bool("json")}, c.App.Writer, c.App.ErrWriter)
		},
	}
}

func jobsCommand() *cli.Command {
	return &cli.Command{
		Name:  "jobs",
		Usage: "list the jobs of every queue, newest first, with their leases",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			&cli.IntFlag{Name: "limit", Value: 20, Usage: "at most `N` jobs (0: all)"},
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			opts := jobsOptions{JSON: c.Bool("json"), Limit: c.Int("limit")}
			return runJobs(c.Context, globalsFrom(c), opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// statusJSON is `dupefs status --json`, and /status.json in the mount.
type statusJSON struct {
	Index  string       `json:"index"`
	Hash   string       `json:"hash_algorithm"`
	Totals store.Totals `json:"totals"`
	Roots  []rootJSON   `json:"roots"`
	// Hosts are the hosts of an index many hosts share (absent when the
	// index has one host only).
	Hosts  []hostJSON `json:"hosts,omitempty"`
	Jobs   []jobJSON  `json:"active_jobs"`
	Thumbs thumbsJSON `json:"thumbnails"`
	WAL    walJSON    `json:"wal"`
	Purge  purgeJSON  `json:"purge"`
	active []store.Job
}

// publicStatusJSON is status.json for the other users of a view they may
// enter: nothing counted over files, which may be files they cannot read
// (the number of groups, copies or wasted bytes, or a thumbnail job, moves
// when a file they cannot read joins a group, and would tell them what it
// holds), nor any root, path or index location. Only what dupefs is and
// whether the index is up to date.
type publicStatusJSON struct {
	Version string `json:"version"`
	Hash    string `json:"hash_algorithm"`
	// State is the index's: "incomplete", "hashing" or "up to date".
	State    string `json:"state"`
	UpToDate bool   `json:"hash_up_to_date"`
}

// publicStatus is status.json for the other users of a view (see
// publicStatusJSON).
func publicStatus(s statusJSON) publicStatusJSON {
	return publicStatusJSON{Version: version, Hash: s.Hash, State: s.Totals.State, UpToDate: s.Totals.HashUpToDate}
}

// thumbsJSON counts thumbnails by status.
type thumbsJSON struct {
	Pending int64 `json:"pending"`
	Running int64 `json:"running"`
	Ready   int64 `json:"ready"`
	Failed  int64 `json:"failed"`
}

// purgeJSON is what waits for a purge of the rows of deleted files and
// folders, with the grace of the last purge (the default when none ran).
type purgeJSON struct {
	KeepMissingSeconds int64         `json:"keep_missing_seconds"`
	MissingFiles       int64         `json:"missing_files"`
	DueFiles           int64         `json:"due_files"`
	DueFolders         int64         `json:"due_folders"`
	LastJob            *purgeJobJSON `json:"last_job"`
}

type purgeJobJSON struct {
	ID         int64   `json:"id"`
	Status     string  `json:"status"`
	Files      int64   `json:"files_purged"`
	Folders    int64   `json:"folders_purged"`
	ErrorCode  string  `json:"error_code,omitempty"`
	FinishedAt *string `json:"finished_at"`
}

// walJSON is the size of the WAL and the last maintenance job.
type walJSON struct {
	Bytes   int64       `json:"bytes"`
	LastJob *walJobJSON `json:"last_job"`
}

type walJobJSON struct {
	ID           int64   `json:"id"`
	Mode         string  `json:"mode"`
	Status       string  `json:"status"`
	Reason       string  `json:"reason"`
	RetryCount   int     `json:"retry_count"`
	Busy         int64   `json:"checkpoint_busy"`
	LogFrames    int64   `json:"checkpoint_log_frames"`
	Checkpointed int64   `json:"checkpointed_frames"`
	ErrorCode    string  `json:"error_code,omitempty"`
	FinishedAt   *string `json:"finished_at"`
}

// buildStatus reads what status shows.
func buildStatus(ctx context.Context, db *store.DB) (statusJSON, error) {
	s := statusJSON{Index: db.Path(), Hash: db.HashAlgo(), Roots: []rootJSON{}, Jobs: []jobJSON{}}
	var err error
	if s.Totals, err = db.Totals(ctx); err != nil {
		return s, err
	}
	roots, err := db.Files().Roots(ctx)
	if err != nil {
		return s, err
	}
	for _, r := range roots {
		s.Roots = append(s.Roots, toRootJSON(r))
	}
	hosts, err := db.Files().Hosts(ctx)
	if err != nil {
		return s, err
	}
	if len(hosts) > 1 {
		for _, h := range hosts {
			s.Hosts = append(s.Hosts, toHostJSON(h, db.Host().Name))
		}
	}
	if s.active, err = db.Jobs().ActiveJobs(ctx); err != nil {
		return s, err
	}
	for _, j := range s.active {
		s.Jobs = append(s.Jobs, toJobJSON(j))
	}
	tc, err := db.Thumbs().ThumbCounts(ctx)
	if err != nil {
		return s, err
	}
	s.Thumbs = thumbsJSON{Pending: tc[store.ThumbPending], Running: tc[store.ThumbRunning],
		Ready: tc[store.ThumbReady], Failed: tc[store.ThumbFailed]}
	if s.WAL.Bytes, err = db.Maint().WALSize(); err != nil {
		return s, err
	}
	wj, err := db.Maint().WALJobs(ctx, 1)
	if err != nil {
		return s, err
	}
	for _, j := range wj {
		s.WAL.LastJob = &walJobJSON{ID: j.ID, Mode: j.Mode, Status: j.Status, Reason: j.Reason,
			RetryCount: j.RetryCount, Busy: j.Busy, LogFrames: j.LogFrames, Checkpointed: j.Checkpointed,
			ErrorCode: j.ErrorCode, FinishedAt: jsonTime(j.FinishedAt)}
	}
	w, err := db.Maint().PurgeWaiting(ctx)
	if err != nil {
		return s, err
	}
	s.Purge = purgeJSON{KeepMissingSeconds: int64(w.KeepMissing / time.Second), MissingFiles: w.Missing,
		DueFiles: w.Due, DueFolders: w.Folders}
	pj, err := db.Maint().PurgeJobs(ctx, 1)
	if err != nil {
		return s, err
	}
	for _, j := range pj {
		s.Purge.LastJob = &purgeJobJSON{ID: j.ID, Status: j.Status, Files: j.Files, Folders: j.Folders,
			ErrorCode: j.ErrorCode, FinishedAt: jsonTime(j.FinishedAt)}
	}
	return s, nil
}

func runStatus(ctx context.Context, g globalOptions, opts statusOptions, stdout, stderr io.Writer) error {
	return withIndex(ctx, g, openOpts{mustExist: true, readOnly: true}, func(db *store.DB) error {
		s, err := buildStatus(ctx, db)
		if err != nil {
			return err
		}
		if opts.JSON {
			return printJSON(stdout, s)
		}
		t := s.Totals
		jobs := s.active
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "index:\t%s (%s)\n", db.Path(), db.HashAlgo())
		fmt.Fprintf(tw, "roots:\t%d\n", t.Roots)
		for _, h := range s.Hosts {
			fmt.Fprintf(tw, "host:\t%s\n", describeHost(h))
		}
		fmt.Fprintf(tw, "files:\t%s in %s folders, %s\n", count(t.Files), count(t.Folders), humanBytes(t.Bytes))
		fmt.Fprintf(tw, "hashed:\t%s whole, %s ruled out by their first and last 4 KiB, %s of a unique size\n",
			count(t.Hashed), count(t.Partial), count(t.Unique))
		fmt.Fprintf(tw, "queued:\t%s\n", count(t.Queued))
		if t.Failed > 0 {
			fmt.Fprintf(tw, "unreadable:\t%s\n", count(t.Failed))
		}
		if t.Missing > 0 {
			fmt.Fprintf(tw, "missing:\t%s (gone since indexed)\n", count(t.Missing))
		}
		if p := s.Purge; p.DueFiles > 0 || p.DueFolders > 0 {
			fmt.Fprintf(tw, "purge:\t%s files and %s folders missing for over %s wait to be purged\n",
				count(p.DueFiles), count(p.DueFolders), shortDuration(time.Duration(p.KeepMissingSeconds)*time.Second))
		}
		fmt.Fprintf(tw, "groups:\t%s, %s paths, %s in extra copies\n", count(t.Groups), count(t.GroupFiles), humanBytes(t.WastedBytes))
		fmt.Fprintf(tw, "folder groups:\t%s, %s in extra copies (dupefs folders)\n", count(t.FolderGroups), humanBytes(t.FolderWasted))
		fmt.Fprintf(tw, "state:\t%s\n", describeState(t))
		for _, r := range s.Roots {
			if r.Watch != "" {
				fmt.Fprintf(tw, "watch:\t%s %s\n", r.Path, r.Watch)
			}
		}
		th := s.Thumbs
		fmt.Fprintf(tw, "thumbnails:\t%s ready, %s pending, %s running, %s failed\n",
			count(th.Ready), count(th.Pending), count(th.Running), count(th.Failed))
		wal := "WAL:\t" + humanBytes(s.WAL.Bytes)
		if j := s.WAL.LastJob; j != nil {
			wal += fmt.Sprintf(", last checkpoint %s %s (%d of %d frames)", j.Mode, j.Status, j.Checkpointed, j.LogFrames)
		}
		fmt.Fprintln(tw, wal)
		for _, j := range jobs {
			fmt.Fprintf(tw, "job:\t%s\n", describeJob(j))
		}
		return tw.Flush()
	})
}

// shortDuration is d without its zero minutes and seconds: 1h, 1h30m, 45s.
func shortDuration(d time.Duration) string {
	t := d.String()
	if strings.HasSuffix(t, "m0s") {
		t = strings.TrimSuffix(t, "0s")
	}
	if strings.HasSuffix(t, "h0m") {
		t = strings.TrimSuffix(t, "0m")
	}
	return t
}

// describeState says what state the index is in, and what to do.
func describeState(t store.Totals) string {
	switch t.State {
	case store.StateIncomplete:
		return "incomplete: a root has not been scanned to the end yet (a scan is under way, was interrupted or failed); run dupefs index"
	case store.StateHashing:
		if t.Queued > 0 {
			return fmt.Sprintf("hashing: %s files wait to be hashed (new, or changed while they were read); run dupefs index", count(t.Queued))
		}
		if t.ScanEpoch == t.HashedEpoch && t.FoldersPending > 0 {
			return fmt.Sprintf("hashing: the signatures of %s folders wait to be updated; run dupefs index", count(t.FoldersPending))
		}
		return "hashing: files changed since the last hash run; run dupefs index"
	}
	if t.PartlyWatched > 0 {
		return fmt.Sprintf("%s as of the last rescan: %d %s not followed whole (the inotify watch limit, "+
			"or a root not there: see watch), so a change there shows only at a later rescan", t.State, t.PartlyWatched,
			map[bool]string{true: "root is", false: "roots are"}[t.PartlyWatched == 1])
	}
	return t.State
}

// warnIfNotUpToDate tells on stderr, before a report or an answer, that the
// index does not cover every file yet, and returns the state.
func warnIfNotUpToDate(ctx context.Context, db *store.DB, con *console) (string, error) {
	t, err := db.Totals(ctx)
	if err != nil {
		return "", err
	}
	if t.State != store.StateUpToDate {
		con.Warn("the index is " + describeState(t))
	}
	return t.State, nil
}

// jobJSON is one job in JSON output.
type jobJSON struct {
	ID             int64   `json:"id"`
	Kind           string  `json:"kind"`
	Status         string  `json:"status"`
	RootID         int64   `json:"root_id,omitempty"`
	Attempt        int64   `json:"attempt"`
	WorkerID       string  `json:"worker_id,omitempty"`
	HeartbeatAt    *string `json:"worker_heartbeat_at"`
	LeaseExpiresAt *string `json:"lease_expires_at"`
	RetryAfter     *string `json:"retry_after"`
	ErrorCode      string  `json:"error_code,omitempty"`
	ErrorMessage   string  `json:"error_message,omitempty"`
	Progress       float64 `json:"progress"`
	ProcessedItems int64   `json:"processed_items"`
	CreatedAt      *string `json:"created_at"`
	StartedAt      *string `json:"started_at"`
	FinishedAt     *string `json:"finished_at"`
}

func jsonTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

func toJobJSON(j store.Job) jobJSON {
	return jobJSON{ID: j.ID, Kind: j.Kind, Status: j.Status, RootID: j.RootID, Attempt: j.Attempt,
		WorkerID: j.WorkerID, HeartbeatAt: jsonTime(j.HeartbeatAt), LeaseExpiresAt: jsonTime(j.LeaseExpiresAt),
		RetryAfter: jsonTime(j.RetryAfter), ErrorCode: j.ErrorCode, ErrorMessage: j.ErrorMessage,
		Progress: j.Progress, ProcessedItems: j.ProcessedItems, CreatedAt: jsonTime(j.CreatedAt),
		StartedAt: jsonTime(j.StartedAt), FinishedAt: jsonTime(j.FinishedAt)}
}

func toRootJSON(r store.Root) rootJSON {
	j := rootJSON{Path: naming.EscapePath(r.Path), Files: r.FileCount, Folders: r.FolderCount, Bytes: r.TotalBytes,
		FollowSymlinks: r.FollowSymlinks, OneFileSystem: r.OneFileSystem, Network: r.Network}
	// A pattern is bytes, as a path is: escaped alike (a newline broke the
	// table, a byte not UTF-8 came out raw, and as U+FFFD in JSON).
	for _, e := range r.Excludes {
		j.Excludes = append(j.Excludes, naming.EscapePath(e))
	}
	j.LastScan = jsonTime(r.LastScanAt)
	j.Watch = r.WatchNote
	return j
}

func describeJob(j store.Job) string {
	s := fmt.Sprintf("%d %s %s", j.ID, j.Kind, j.Status)
	if j.Kind == store.KindScan && j.RootID != 0 {
		s += fmt.Sprintf(" root=%d", j.RootID)
	}
	if j.Status == store.StatusRunning {
		s += fmt.Sprintf(" by %s, lease until %s, %.0f%%", j.WorkerID,
			j.LeaseExpiresAt.Local().Format(time.TimeOnly), j.Progress*100)
	}
	if j.Status == store.StatusRetryable {
		s += " retry at " + j.RetryAfter.Local().Format(time.TimeOnly)
	}
	if j.ErrorCode != "" {
		s += fmt.Sprintf(" [%s: %s]", j.ErrorCode, j.ErrorMessage)
	}
	return s
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runJobs(ctx context.Context, g globalOptions, opts jobsOptions, stdout, stderr io.Writer) error {
	limit := opts.Limit
	if limit < 0 {
		return usageErrorf("--limit must not be negative")
	}
	return withIndex(ctx, g, openOpts{mustExist: true, readOnly: true}, func(db *store.DB) error {
		var all []store.Job
		var after *store.JobCursor
		for limit == 0 || len(all) < limit {
			page := 500
			if limit > 0 {
				page = min(page, limit-len(all))
			}
			js, err := db.Jobs().AllJobsPage(ctx, after, page)
			if err != nil {
				return err
			}
			all = append(all, js...)
			if len(js) < page {
				break
			}
			last := js[len(js)-1]
			after = &store.JobCursor{CreatedAt: last.CreatedAt, Kind: last.Kind, ID: last.ID}
		}
		if opts.JSON {
			out := make([]jobJSON, 0, len(all))
			for _, j := range all {
				out = append(out, toJobJSON(j))
			}
			return printJSON(stdout, out)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tKIND\tSTATUS\tROOT\tATTEMPT\tWORKER\tLEASE UNTIL\tPROGRESS\tCREATED\tERROR")
		for _, j := range all {
			lease := "-"
			if !j.LeaseExpiresAt.IsZero() {
				lease = j.LeaseExpiresAt.Local().Format(time.TimeOnly)
			}
			worker := j.WorkerID
			if worker == "" {
				worker = "-"
			}
			errText := "-"
			if j.ErrorCode != "" {
				errText = j.ErrorCode + ": " + j.ErrorMessage
			}
			root := "-"
			if j.RootID != 0 {
				root = strconv.FormatInt(j.RootID, 10)
			}
			progress := fmt.Sprintf("%.0f%%", j.Progress*100)
			switch j.Kind {
			case store.KindPurge:
				progress = fmt.Sprintf("%d rows", j.ProcessedItems)
			case store.KindCheckpoint, store.KindThumbnailCleanup:
				progress = "-"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Kind, j.Status, root,
				j.Attempt, worker, lease, progress, j.CreatedAt.Local().Format("2006-01-02 15:04:05"), errText)
		}
		return tw.Flush()
	})
}
