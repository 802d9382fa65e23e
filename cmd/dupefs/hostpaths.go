package main

import (
	"context"
	"path/filepath"
	"strings"

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
