package fusefs

import (
	"strings"
	"syscall"

	"github.com/dupefs/dupefs/store"
	"github.com/dupefs/dupefs/store/naming"
)

// Copies on other hosts. In an index many hosts share, a group lists every
// copy of the fleet; one on another host is not a file of this machine.
// It shows as a symlink (whatever Config.ServeFiles says) to where that
// host's files are reached from here: /net/HOST/abs/path, as autofs's
// -hosts map mounts the NFS exports of every host, or PREFIX/abs/path for
// a host Config.RemotePrefix maps. Its name says its host, HOST:name (a
// host name holds no ':'), after the name it would have as a copy here, so
// names stay unique in the group. Whether another user may read it cannot
// be known from here: with AllowOther only the mounting user and root see
// it (readsCopy), and it is never checked against a local path.

// copyTarget is where the copy at path on host (""; this host) is reached.
func (f *FS) copyTarget(host, path string) string {
	if host == "" {
		return path
	}
	if p, ok := f.cfg.RemotePrefix[host]; ok {
		return strings.TrimRight(p, "/") + path
	}
	return "/net/" + host + path
}

// copyName is the name a copy shows under: linkName, after its host and a
// ':' when it lies on another host.
func (f *FS) copyName(base, host string, id int64, first bool) string {
	return hostName(host, f.linkName(base, host, id, first))
}

// hostName puts host (if any, as shownHost shows it) before name.
func hostName(host, name string) string {
	if host == "" {
		return name
	}
	return shownHost(host) + ":" + name
}

// shownHost is a host's name as the names of the view hold it: whole when
// it is no longer than a host's name may be (store.MaxHostName), else cut
// in its middle to that: a host registered by an older dupefs may have a
// longer name, and no name made of it may pass 255 bytes. A name asked
// for says the host so (hostNamed), and is compared so.
func shownHost(host string) string {
	return naming.CutMiddle(host, store.MaxHostName, false)
}

// modeOf is how a copy on host shows in a listing.
func (f *FS) modeOf(host string) uint32 {
	if host != "" {
		return syscall.S_IFLNK
	}
	return f.copyMode()
}

// hostNamed lists the (host, name) a name asked for may stand for: a copy
// of this host of that name, and, when it holds a ':', a copy on the host
// before it of the name after it.
func hostNamed(name string) [][2]string {
	out := [][2]string{{"", name}}
	if h, rest, ok := strings.Cut(name, ":"); ok && h != "" && rest != "" {
		out = append(out, [2]string{h, rest})
	}
	return out
}

// memberTarget is where the copy m is reached from here.
func (f *FS) memberTarget(m store.Member) string { return f.copyTarget(m.Host, m.Path()) }

// memberReadable is folderReadable of a folder of a folder group: never,
// for a reader, of one on another host.
func (f *FS) memberReadable(r reader, m store.FolderMember, fr *fresh) bool {
	return m.Host == "" && f.folderReadable(r, m.Path, fr)
}
