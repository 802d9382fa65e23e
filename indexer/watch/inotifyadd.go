package watch

import "golang.org/x/sys/unix"

// adder works through the todo list.
func (in *inotify) adder() {
	defer in.wg.Done()
	for {
		select {
		case <-in.quit:
			return
		case <-in.work:
		}
		for {
			in.mu.Lock()
			if len(in.todo) == 0 {
				in.todo = nil
				in.mu.Unlock()
				break
			}
			o := in.todo[0]
			in.todo = in.todo[1:]
			in.mu.Unlock()
			select {
			case <-in.quit:
				return
			default:
			}
			in.do(o)
		}
	}
}

func (in *inotify) do(o inotifyOp) {
	switch o.kind {
	case opWatch:
		in.mu.Lock()
		root := in.rootOf(o.path)
		old, known := in.paths[o.path]
		partial := in.part[root] != nil
		in.mu.Unlock()
		if root == "" {
			return
		}
		if known && !partial && in.same(o.path, old) {
			// Watched already (a create raced the walk that found it):
			// still name it, its listing may be older than its watch.
			in.namer.name(o.path)
			return
		}
		if hit := in.watchTree(o.path, true, nil); hit != nil && !partial {
			in.limited(root)
		}
	case opDrop:
		in.mu.Lock()
		in.dropTree(o.path)
		in.mu.Unlock()
	case opRewatch:
		in.mu.Lock()
		in.rewatch = false
		in.mu.Unlock()
		// Events were lost: any folder may lack its watch, and any watch
		// may name a folder that moved. Watch every folder of every root
		// again (a folder watched already keeps its watch), drop the
		// watches no root holds any more, then have each root rescanned
		// whole.
		in.mu.Lock()
		roots := make([]string, 0, len(in.roots))
		for r := range in.roots {
			roots = append(roots, r)
		}
		in.mu.Unlock()
		seen := map[int32]bool{}
		for _, r := range roots {
			if hit := in.watchTree(r, false, seen); hit != nil {
				in.counted(r, hit)
			}
		}
		in.mu.Lock()
		for wd, p := range in.wds {
			if !seen[wd] {
				unix.InotifyRmWatch(in.fd, uint32(wd))
				delete(in.wds, wd)
				if in.paths[p] == wd {
					in.unlink(p)
				}
			}
		}
		in.mu.Unlock()
		for _, r := range roots {
			in.note(change{lost: true, root: r})
		}
	case opRetry:
		in.mu.Lock()
		partial := in.part[o.path] != nil
		in.mu.Unlock()
		if !partial {
			return
		}
		if hit := in.watchTree(o.path, false, nil); hit != nil {
			in.counted(o.path, hit)
			return
		}
		in.mu.Lock()
		delete(in.part, o.path)
		in.mu.Unlock()
		in.note(change{root: o.path, whole: true})
	}
}

// same reports whether the folder at p is the one watched as wd. A path
// is not a folder: one removed and made again under its name (or another
// moved over it) is new, while the kernel may not yet have said that the
// old one's watch is gone (it says so only once the old folder is closed
// by every program). Adding a watch to a folder watched already returns
// its watch and costs one call; a new folder gets a watch of its own.
func (in *inotify) same(p string, wd int32) bool {
	got, err := addWatch(in.fd, p, inotifyMask)
	if err == unix.ENOSPC {
		return false // a new folder past the limit: the walk says so
	}
	if err != nil {
		return true // gone, or unreadable: its parent's events cover it
	}
	if int32(got) == wd {
		return true
	}
	in.mu.Lock()
	in.bind(int32(got), p)
	in.mu.Unlock()
	return false
}
