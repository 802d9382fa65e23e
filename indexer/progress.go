package indexer

import (
	"sync"
	"sync/atomic"
	"time"
)

// Progress is updated by the indexer while it works; read it from any
// goroutine.
type Progress struct {
	FilesSeen   atomic.Int64 // files the scans looked at
	FoldersSeen atomic.Int64
	BytesSeen   atomic.Int64
	ScanChanges atomic.Int64 // files added, changed or lost
	// ScanExpected is the file count of the root's last scan, if any: what
	// the current scan will likely see.
	ScanExpected atomic.Int64

	HashFiles     atomic.Int64 // candidate files of the current hash run
	HashFilesDone atomic.Int64 // of which settled (read, reused or failed)
	FilesRead     atomic.Int64 // files opened for hashing
	BytesRead     atomic.Int64 // bytes read for hashing
	// PriorHashes counts the files that took their hash from an index
	// being imported (Config.Prior) instead of a read.
	PriorHashes atomic.Int64
	// HashPass is the pass of the current hash run: 1 reads the first and
	// last 4 KiB of the large candidates and the small ones whole, 2 the
	// large ones whose prefix another inode shares whole. HashBase is
	// BytesRead when the pass began, and HashBytes what it reads in all
	// at most (hard links and reused hashes make it read less).
	HashPass  atomic.Int32
	HashBase  atomic.Int64
	HashBytes atomic.Int64

	// FolderSums is how many folders got new signatures when the last
	// run folded its changes in.
	FolderSums atomic.Int64

	ThumbsMade    atomic.Int64 // thumbnails made by this process
	ThumbsFailed  atomic.Int64 // thumbnails that failed
	ThumbsCleaned atomic.Int64 // thumbnails of gone groups removed

	mu     sync.Mutex
	phase  string
	detail string
	since  time.Time                // when phase began
	spent  map[string]time.Duration // time in each phase that ended
}

// startPass records that hash pass n begins and reads at most bytes.
func (p *Progress) startPass(n int32, bytes int64) {
	p.HashBase.Store(p.BytesRead.Load())
	p.HashBytes.Store(bytes)
	p.HashPass.Store(n)
}

// SetPhase records what the indexer does now ("scan", "hash", "wait",
// "folders", "thumbs", "done") and a detail (a root path, who it waits
// for), and adds the time since the last call to the phase that ends.
func (p *Progress) SetPhase(phase, detail string) {
	p.mu.Lock()
	now := time.Now()
	if p.phase != "" {
		if p.spent == nil {
			p.spent = map[string]time.Duration{}
		}
		p.spent[p.phase] += now.Sub(p.since)
	}
	p.phase, p.detail, p.since = phase, detail, now
	p.mu.Unlock()
}

// Spent returns the time spent in each phase that ended.
func (p *Progress) Spent() map[string]time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]time.Duration, len(p.spent))
	for k, v := range p.spent {
		out[k] = v
	}
	return out
}

// Phase returns what SetPhase recorded last.
func (p *Progress) Phase() (phase, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.phase, p.detail
}
