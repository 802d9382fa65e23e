package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// fusefloor serves a copy of a tree from memory over FUSE, answering as
// dupefs' mount does (READDIRPLUS with the attributes of folders, none for
// symlinks; no OPENDIR; entries and attributes kept a minute) but with no
// index behind it: a cold walk of it is the floor of any FUSE view of that
// shape on this kernel, the round trips and nothing else. It serves until
// SIGTERM or SIGINT, then unmounts.
func fusefloor(args []string) error {
	fs := flag.NewFlagSet("fusefloor", flag.ExitOnError)
	tree := fs.String("tree", "", "the tree to serve (folders and symlinks)")
	mnt := fs.String("mnt", "", "where to mount it")
	fs.Parse(args)
	if *tree == "" || *mnt == "" {
		return fmt.Errorf("fusefloor: -tree and -mnt are required")
	}
	f := &floorFS{RawFileSystem: fuse.NewDefaultRawFileSystem()}
	f.nodes = []floorNode{{}, {mode: syscall.S_IFDIR}} // node ids start at 1, the root
	if err := f.load(*tree, 1); err != nil {
		return err
	}
	srv, err := fuse.NewServer(f, *mnt, &fuse.MountOptions{
		FsName: "fusefloor", Name: "fusefloor", Options: []string{"ro"},
		DirectMount: true, DirectMountFlags: syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV,
		DisableXAttrs: true, MaxReadAhead: 128 << 10, MaxBackground: 64,
	})
	if err != nil {
		return fmt.Errorf("fusefloor: mount %s: %w", *mnt, err)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		srv.Unmount()
		return fmt.Errorf("fusefloor: mount %s: %w", *mnt, err)
	}
	fmt.Fprintf(os.Stderr, "fusefloor: %d nodes of %s at %s\n", len(f.nodes)-1, *tree, *mnt)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; srv.Unmount() }()
	srv.Wait()
	return nil
}

type floorNode struct {
	mode     uint32
	target   []byte            // a symlink's
	names    []string          // a folder's entries, in order
	children []uint64          // their node ids
	byName   map[string]uint64 // the same, by name
}

type floorFS struct {
	fuse.RawFileSystem
	nodes []floorNode
}

// load adds the entries of folder dir as the children of node id.
func (f *floorFS) load(dir string, id uint64) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	f.nodes[id].byName = make(map[string]uint64, len(ents))
	for _, e := range ents {
		c := uint64(len(f.nodes))
		n := floorNode{mode: syscall.S_IFREG}
		p := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir():
			n.mode = syscall.S_IFDIR
		case e.Type()&os.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			n.mode, n.target = syscall.S_IFLNK, []byte(t)
		}
		f.nodes = append(f.nodes, n)
		f.nodes[id].names = append(f.nodes[id].names, e.Name())
		f.nodes[id].children = append(f.nodes[id].children, c)
		f.nodes[id].byName[e.Name()] = c
		if n.mode == syscall.S_IFDIR {
			if err := f.load(p, c); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *floorFS) node(id uint64) *floorNode {
	if id == 0 || id >= uint64(len(f.nodes)) {
		return nil
	}
	return &f.nodes[id]
}

func (f *floorFS) attr(id uint64, a *fuse.Attr) {
	n := &f.nodes[id]
	a.Ino, a.Mode, a.Nlink, a.Blksize = id, n.mode|0o555, 1, 4096
	switch n.mode {
	case syscall.S_IFDIR:
		a.Nlink = 2
	case syscall.S_IFLNK:
		a.Mode, a.Size = n.mode|0o777, uint64(len(n.target))
	}
}

func (f *floorFS) entry(id uint64, out *fuse.EntryOut) {
	out.NodeId, out.Ino = id, id
	out.SetEntryTimeout(time.Minute)
	out.SetAttrTimeout(time.Minute)
	f.attr(id, &out.Attr)
}

func (f *floorFS) String() string { return "fusefloor" }

func (f *floorFS) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	p := f.node(h.NodeId)
	if p == nil {
		return fuse.ENOENT
	}
	c, ok := p.byName[name]
	if !ok {
		return fuse.ENOENT
	}
	f.entry(c, out)
	return fuse.OK
}

func (f *floorFS) Forget(uint64, uint64) {}

func (f *floorFS) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if f.node(in.NodeId) == nil {
		return fuse.ENOENT
	}
	f.attr(in.NodeId, &out.Attr)
	out.SetTimeout(time.Minute)
	return fuse.OK
}

func (f *floorFS) Readlink(_ <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	n := f.node(h.NodeId)
	if n == nil || n.mode != syscall.S_IFLNK {
		return nil, fuse.EINVAL
	}
	return n.target, fuse.OK
}

// OpenDir answers ENOSYS, as dupefs' does: no OPENDIR or RELEASEDIR round
// trips.
func (f *floorFS) OpenDir(<-chan struct{}, *fuse.OpenIn, *fuse.OpenOut) fuse.Status {
	return fuse.ENOSYS
}

func (f *floorFS) ReleaseDir(*fuse.ReleaseIn) {}

func (f *floorFS) ReadDir(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return f.list(in, out, false)
}

func (f *floorFS) ReadDirPlus(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return f.list(in, out, true)
}

// list answers a listing from offset in.Offset: "." and ".." have
// offsets 1 and 2, as in dupefs' listings, and entry i has i+3.
func (f *floorFS) list(in *fuse.ReadIn, out *fuse.DirEntryList, plus bool) fuse.Status {
	n := f.node(in.NodeId)
	if n == nil || n.mode != syscall.S_IFDIR {
		return fuse.ENOTDIR
	}
	add := func(e fuse.DirEntry, attrs bool) bool {
		if !plus {
			return out.AddDirEntry(e)
		}
		eo := out.AddDirLookupEntry(e)
		if eo != nil && attrs {
			f.entry(e.Ino, eo) // a folder's, as dupefs gives a group folder's
		}
		return eo != nil
	}
	dots := []string{".", ".."}
	for off := in.Offset; off < 2; off++ {
		if !add(fuse.DirEntry{Name: dots[off], Mode: syscall.S_IFDIR, Ino: in.NodeId, Off: off + 1}, false) {
			return fuse.OK
		}
	}
	for i := int(max(in.Offset, 2) - 2); i < len(n.names); i++ {
		c := n.children[i]
		mode := f.nodes[c].mode
		if !add(fuse.DirEntry{Name: n.names[i], Mode: mode, Ino: c, Off: uint64(i + 3)}, mode == syscall.S_IFDIR) {
			break
		}
	}
	return fuse.OK
}

func (f *floorFS) StatFs(_ <-chan struct{}, _ *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	out.Bsize, out.Frsize, out.NameLen = 4096, 4096, 255
	return fuse.OK
}
