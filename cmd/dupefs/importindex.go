package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// runImport is `dupefs index --import OLD.db`: an index file taken over
// into a PostgreSQL index, as this host's. Its roots are added as `root
// add` would add them (with their options, and its refusals); an index
// run follows, in which a file takes its hash from OLD.db when the disk
// holds it as OLD.db recorded it (its path, size, mtime, device and
// inode), and is read otherwise; then OLD.db's ledger is copied, in one
// transaction that ends the import. OLD.db is only read. Killed at any
// point, the import is finished by running it again; once done, running
// it again does nothing.
func runImport(ctx context.Context, g globalOptions, opts indexOptions, stderr io.Writer) error {
	switch {
	case !store.IsPostgresURL(g.DB):
		return usageErrorf("--import takes an index file over into a PostgreSQL index: give --db postgres://… " +
			"(an index file moves as a file: copy it, with --db naming the copy)")
	case len(opts.Paths) > 0:
		return usageErrorf("--import adds the roots of %s: add other roots with 'dupefs root add' or a later 'dupefs index PATH'",
			naming.EscapePath(opts.Import))
	case opts.Watch:
		return usageErrorf("--import runs once: follow the disk afterwards with 'dupefs index --watch'")
	case opts.Hash != "":
		return usageErrorf("--hash: an import keeps the hashes of %s, made with its algorithm", naming.EscapePath(opts.Import))
	}
	if err := opts.Indexer.validate(); err != nil {
		return err
	}
	src, err := store.OpenSource(ctx, opts.Import)
	if err != nil {
		return fmt.Errorf("--import %s: %w", naming.EscapePath(opts.Import), err)
	}
	defer src.Close()
	old := naming.EscapePath(src.Path())
	con := newConsole(stderr)
	tuneGC()
	return withIndex(ctx, g, openOpts{hashAlgo: src.HashAlgo(), batch: true}, func(db *store.DB) error {
		mark, begun, err := db.Ledger().ImportMark(ctx, src)
		if err != nil {
			return err
		}
		switch {
		case begun && mark.Done:
			con.Printf("%s was imported already, by host %s on %s: nothing to do\n", old, mark.Host, mark.At.Format("2006-01-02 15:04"))
			return nil
		case begun && mark.Host != db.Host().Name:
			return usageErrorf("%s is being imported by host %s: run the import again there", old, mark.Host)
		}
		if err := warnOtherMachine(ctx, con, src, db.Host(), old); err != nil {
			return err
		}
		dead := indexer.DeadOn(db.Host())
		underWay := func(p store.ActionPlan) error {
			return &exitError{code: ExitError, msg: fmt.Sprintf("%s is acting on %s: let it end, then import", p.RunName(), old)}
		}
		if p, live, err := src.RunUnderWay(ctx, dead); err != nil {
			return err
		} else if live {
			return underWay(p)
		}
		if err := importRoots(ctx, db, con, src); err != nil {
			return err
		}
		if err := db.Ledger().StartImport(ctx, src); err != nil {
			return err
		}
		p, err := indexRoots(ctx, g, db, con, opts, src, stderr)
		if err != nil {
			return err
		}
		led, err := db.Ledger().ImportLedger(ctx, src, dead)
		if run := (*store.RunUnderWayError)(nil); errors.As(err, &run) {
			return underWay(run.Plan) // begun while the roots were indexed
		}
		if err != nil {
			return fmt.Errorf("import the ledger of %s: %w", old, err)
		}
		// The rows the ledger brought (files that are gone) are in their
		// folders' sums.
		if _, err := db.Folders().UpdateFolderSigs(ctx); err != nil {
			return err
		}
		con.Printf("imported %s: %s hashes taken over, %s files read; %d plans of %d actions (dupefs ops)\n",
			old, count(p.PriorHashes.Load()), count(p.FilesRead.Load()), led.Plans, led.Actions)
		if led.Unknown > 0 {
			con.Warn(fmt.Sprintf("%d files the ledger names are under no root here any more: their actions name none", led.Unknown))
		}
		return nil
	})
}

// importRoots adds the roots of src as this host's, with their options,
// after checking every one as `root add` does: a folder that is not there
// (or not a folder), or a network file system the root did not take in,
// is refused before any root is added.
func importRoots(ctx context.Context, db *store.DB, con *console, src *store.Source) error {
	roots, err := src.Roots(ctx)
	if err != nil {
		return err
	}
	if len(roots) == 0 {
		return usageErrorf("%s has no roots: nothing to import", naming.EscapePath(src.Path()))
	}
	dirs := make([]string, len(roots))
	specs := make([]store.RootSpec, len(roots))
	for i, r := range roots {
		dir, err := resolveDir(r.Path)
		if err != nil {
			return fmt.Errorf("root %s of %s: %w", naming.EscapePath(r.Path), naming.EscapePath(src.Path()), err)
		}
		specs[i] = store.RootSpec{FollowSymlinks: r.FollowSymlinks, OneFileSystem: r.OneFileSystem, Network: r.Network, Excludes: r.Excludes}
		if err := networkRefused(ctx, db, dir, specs[i], false); err != nil {
			return err
		}
		dirs[i] = dir
	}
	for i, dir := range dirs {
		if err := addRoots(ctx, db, con, []string{dir}, specs[i], false); err != nil {
			return err
		}
	}
	return nil
}

// warnOtherMachine warns when the index file was made on another machine
// than this one (their machine ids differ, both known): its roots' paths
// are taken as this host's all the same, and it says which hosts.
func warnOtherMachine(ctx context.Context, con *console, src *store.Source, here store.Host, old string) error {
	there, err := src.Host(ctx)
	if err != nil {
		return err
	}
	if there.MachineID == "" || here.MachineID == "" || there.MachineID == here.MachineID {
		return nil
	}
	name := there.Name
	if name == "" {
		name = "(no name)"
	}
	con.Warn(fmt.Sprintf("%s was made on another machine: host %s (machine id %s), not this host %s (machine id %s); "+
		"its roots and their paths are taken as paths of %s", old, naming.EscapePath(name), naming.EscapePath(there.MachineID),
		naming.EscapePath(here.Name), naming.EscapePath(here.MachineID), naming.EscapePath(here.Name)))
	return nil
}
