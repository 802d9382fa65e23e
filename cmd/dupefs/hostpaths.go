package main

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/dupefs/dupefs/indexer/folders"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// hostPaths names the copies a report prints from an index many hosts
// share: a copy on this host by its path, one on another host as
// HOST:/path (naming.HostPath). With local, the copies of other hosts are
// left out, and so is a group left with fewer than two inodes here: what
// remains is a report fclones or duperemove can act on.
type hostPaths struct {
	remote map[int64]string // root id -> host name, for other hosts' roots
	roots  []store.Root     // other hosts' roots
	local  bool
}

// newHostPaths reads the roots of every host.
func newHostPaths(ctx context.Context, db *store.DB, local bool) (*hostPaths, error) {
	all, err := db.Files().AllRoots(ctx)
	if err != nil {
		return nil, err
	}
	hp := &hostPaths{remote: map[int64]string{}, local: local}
	for _, r := range all {
		if r.HostID != db.Host().ID {
			hp.remote[r.ID] = r.Host
			hp.roots = append(hp.roots, r)
		}
	}
	return hp, nil
}

// files is a group's files as the report prints them; ok is false when
// the group is left out.
func (hp *hostPaths) files(files []store.GroupFile) (out []store.GroupFile, ok bool) {
	if len(hp.remote) == 0 {
		return files, true
	}
	out = make([]store.GroupFile, 0, len(files))
	inodes := map[[2]uint64]bool{}
	for _, f := range files {
		host, remote := hp.remote[f.RootID]
		switch {
		case remote && hp.local:
			continue
		case remote:
			f.Path = naming.HostPath(host, f.Path)
		default:
			inodes[[2]uint64{f.Dev, f.Ino}] = true
		}
		out = append(out, f)
	}
	return out, !hp.local || len(inodes) >= 2
}

// path is an indexed path as a report prints it: HOST:/path when it lies
// in a root of another host (no path is a root of two hosts' alike).
func (hp *hostPaths) path(p string) string {
	for _, r := range hp.roots {
		if naming.Within(r.Path, p) {
			return naming.HostPath(r.Host, p)
		}
	}
	return p
}

// folders names the folders of a folder report as they are printed.
func (hp *hostPaths) folders(rep *folders.Report) {
	if len(hp.roots) == 0 {
		return
	}
	for i := range rep.Exact {
		for j, f := range rep.Exact[i].Folders {
			rep.Exact[i].Folders[j] = hp.path(f)
		}
	}
	for i := range rep.Partial {
		rep.Partial[i].A, rep.Partial[i].B = hp.path(rep.Partial[i].A), hp.path(rep.Partial[i].B)
	}
}

// remotePrefixes reads mount's --remote-prefix HOST=PREFIX flags: PREFIX
// an absolute folder, one per host.
func remotePrefixes(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(flags))
	for _, fl := range flags {
		host, prefix, ok := strings.Cut(fl, "=")
		if !ok {
			return nil, usageErrorf("--remote-prefix %s: want HOST=PREFIX", naming.EscapePath(fl))
		}
		if err := store.CheckHostName(host); err != nil {
			return nil, usageErrorf("--remote-prefix %s: %v", naming.EscapePath(fl), err)
		}
		if !filepath.IsAbs(prefix) {
			return nil, usageErrorf("--remote-prefix %s: PREFIX must be an absolute path", naming.EscapePath(fl))
		}
		if _, dup := out[host]; dup {
			return nil, usageErrorf("--remote-prefix: host %s given twice", host)
		}
		out[host] = filepath.Clean(prefix)
	}
	return out, nil
}
