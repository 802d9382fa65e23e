package fusefs

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Mount is a mounted view.
type Mount struct {
	Dir  string
	fs   *FS
	srv  *fuse.Server
	stop context.CancelFunc
	done chan struct{} // the watcher ended
}

// Mount mounts the view at dir (an existing, empty folder) and serves it
// until Unmount, or until someone unmounts it from outside (Wait returns
// then).
func (f *FS) Mount(dir string) (*Mount, error) {
	w, seqs, err := f.startWatch()
	if err != nil {
		return nil, fmt.Errorf("watch the index: %w", err)
	}
	srv, err := fuse.NewServer(&raw{RawFileSystem: fuse.NewDefaultRawFileSystem(), f: f}, dir, f.mountOptions())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	f.srv = srv
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		w.Close()
		Unmount(srv, dir)
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Mount{Dir: dir, fs: f, srv: srv, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		f.watch(ctx, w, seqs)
	}()
	return m, nil
}

// Wait returns once the kernel connection is gone: after Unmount, or an
// unmount from outside (fusermount3 -u, umount).
func (m *Mount) Wait() {
	m.srv.Wait()
	m.stop()
	<-m.done
}

// Unmount stops the watcher and unmounts, falling back to a lazy detach
// when the mount is busy (an open file, a shell cd'ed into it): the mount
// point is free at once and the kernel lets go when the last user does.
// lazy reports that it had to.
func (m *Mount) Unmount() (lazy bool, err error) {
	m.fs.stopping.Store(true)
	m.stop()
	<-m.done
	return Unmount(m.srv, m.Dir)
}

// Unmount unmounts srv at dir, lazily when a plain unmount fails.
func Unmount(srv *fuse.Server, dir string) (lazy bool, err error) {
	err = srv.Unmount() // retries EBUSY for about 0.3 s
	if err == nil {
		return false, nil
	}
	if derr := Detach(dir); derr != nil {
		return false, errors.Join(err, derr)
	}
	return true, nil
}

// Detach lazily unmounts whatever is mounted at dir: the way to clear the
// mount a killed process left behind ("transport endpoint is not
// connected").
func Detach(dir string) error {
	if err := syscall.Unmount(dir, syscall.MNT_DETACH); err == nil {
		return nil
	}
	for _, tool := range []string{"fusermount3", "fusermount"} {
		if path, err := exec.LookPath(tool); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			out, err := exec.CommandContext(ctx, path, "-u", "-z", dir).CombinedOutput()
			cancel()
			if err == nil {
				return nil
			}
			return fmt.Errorf("%s -u -z %s: %v: %s", tool, dir, err, out)
		}
	}
	return fmt.Errorf("unmount %s: not permitted, and no fusermount3 found", dir)
}
