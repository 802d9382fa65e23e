package fusefs

import "github.com/hanwen/go-fuse/v2/fs"

// Every node type implements what the bridge looks for.
var (
	_ = (fs.NodeOnAdder)((*rootNode)(nil))
	_ = (fs.NodeGetattrer)((*rootNode)(nil))

	_ = (fs.NodeGetattrer)((*byHashDir)(nil))
	_ = (fs.NodeLookuper)((*byHashDir)(nil))
	_ = (fs.NodeOpendirHandler)((*byHashDir)(nil))

	_ = (fs.NodeGetattrer)((*groupDir)(nil))
	_ = (fs.NodeLookuper)((*groupDir)(nil))
	_ = (fs.NodeOpendirHandler)((*groupDir)(nil))

	_ = (fs.NodeReadlinker)((*linkNode)(nil))
	_ = (fs.NodeGetattrer)((*linkNode)(nil))

	_ = (fs.NodeGetattrer)((*bySizeDir)(nil))
	_ = (fs.NodeLookuper)((*bySizeDir)(nil))
	_ = (fs.NodeOpendirHandler)((*bySizeDir)(nil))

	_ = (fs.NodeGetattrer)((*sizeDir)(nil))
	_ = (fs.NodeLookuper)((*sizeDir)(nil))
	_ = (fs.NodeOpendirHandler)((*sizeDir)(nil))

	_ = (fs.NodeReadlinker)((*sizeLink)(nil))
	_ = (fs.NodeGetattrer)((*sizeLink)(nil))

	_ = (fs.NodeGetattrer)((*thumbsDir)(nil))
	_ = (fs.NodeLookuper)((*thumbsDir)(nil))
	_ = (fs.NodeOpendirHandler)((*thumbsDir)(nil))

	_ = (fs.NodeGetattrer)((*statusFile)(nil))
	_ = (fs.NodeOpener)((*statusFile)(nil))

	_ = (fs.FileReaddirenter)((*dirHandle)(nil))
	_ = (fs.FileSeekdirer)((*dirHandle)(nil))
	_ = (fs.FileReleasedirer)((*dirHandle)(nil))
	_ = (fs.FileReader)((*bytesHandle)(nil))
)
