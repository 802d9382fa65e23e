package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// buildSummary is /summary.txt in the mount: status.json for people, a few
// plain lines (groups, the space their extra copies take, the largest,
// the folder groups, the state of the index).
func buildSummary(ctx context.Context, db *store.DB) ([]byte, error) {
	s, err := buildStatus(ctx, db)
	if err != nil {
		return nil, err
	}
	t := s.Totals
	var b strings.Builder
	fmt.Fprintf(&b, "Duplicate files: %s, %s in extra copies (files/ lists them, the most space first).\n",
		naming.Counted(t.Groups, "group", "groups"), naming.DecimalSize(t.WastedBytes))
	top, err := largestGroup(ctx, db.View(), t.Groups)
	if err != nil {
		return nil, err
	}
	if top != "" {
		fmt.Fprintf(&b, "Largest: %s.\n", top)
	}
	fmt.Fprintf(&b, "Duplicate folders: %s, %s in extra copies (folders/ lists them).\n",
		naming.Counted(t.FolderGroups, "group", "groups"), naming.DecimalSize(t.FolderWasted))
	fmt.Fprintf(&b, "Index: %s.\n", describeState(t))
	fmt.Fprintf(&b, "Index file: %s (%s hashes), dupefs %s.\n", naming.EscapePath(db.Path()), db.HashAlgo(), version)
	return []byte(b.String()), nil
}

// largestGroup says which group's extra copies take the most space: its
// folder in files/ (ranked first of count), and that space. "" when there
// is no group.
func largestGroup(ctx context.Context, vw *store.View, count int64) (string, error) {
	gs, err := vw.WastePage(ctx, nil, 0, 1)
	if err != nil || len(gs) == 0 {
		return "", err
	}
	g := gs[0]
	names, err := vw.CopyNames(ctx, []int64{g.ID})
	if err != nil {
		return "", err
	}
	label := naming.GroupLabel(1, max(count, 1), naming.CommonName(names[g.ID]), g.Files, g.Size)
	return fmt.Sprintf("files/%s, %s in extra copies", label, naming.DecimalSize(g.Waste())), nil
}

// publicSummary is /summary.txt for the other users of a view they may
// enter: what publicStatus says, nothing counted over files they may not
// read, no root, path or index location.
func publicSummary(s statusJSON) []byte {
	p := publicStatus(s)
	return []byte(fmt.Sprintf("Duplicate files: files/ lists the groups of those you may read, the most space first.\n"+
		"Index: %s.\ndupefs %s (%s hashes).\n", p.State, p.Version, p.Hash))
}
