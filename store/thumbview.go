package store

import (
	"context"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// A thumbnail is its host's: made from its copies into its cache, and
// read by its view only (host_id, this process's host).

// ThumbCounts counts this host's thumbnails by status.
func (th *Thumbs) ThumbCounts(ctx context.Context) (map[string]int64, error) {
	rows, err := th.db.query(ctx, "SELECT status, count(*) FROM thumbnails WHERE host_id = ? GROUP BY status", th.db.host.ID)
	if err != nil {
		return nil, classify("count thumbnails", err)
	}
	defer rows.Close()
	out := map[string]int64{ThumbPending: 0, ThumbRunning: 0, ThumbReady: 0, ThumbFailed: 0}
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return nil, classify("count thumbnails", err)
		}
		out[s] = n
	}
	return out, classify("count thumbnails", rows.Err())
}

// ReadyThumbsPage lists the ready thumbnails of groups by id, after
// afterID. A content that stopped being a group keeps its row until its
// cleanup job runs, but is not listed.
func (vw *View) ReadyThumbsPage(ctx context.Context, afterID int64, limit int) ([]Thumb, error) {
	return vw.db.thumbs(ctx, "SELECT "+thumbCols+` FROM thumbnails t JOIN contents c ON c.id = t.content_id
		WHERE t.status = 'ready' AND c.`+isGroup+vw.db.localCopy("c")+` AND t.id > ? AND t.host_id = ?
		ORDER BY t.id LIMIT ?`, afterID, vw.db.host.ID, limit)
}

// ThumbsPage lists every thumbnail of this host by id after afterID,
// whatever its status and whether its content is still a group.
func (th *Thumbs) ThumbsPage(ctx context.Context, afterID int64, limit int) ([]Thumb, error) {
	return th.db.thumbs(ctx, "SELECT "+thumbCols+` FROM thumbnails t JOIN contents c ON c.id = t.content_id
		WHERE t.id > ? AND t.host_id = ? ORDER BY t.id LIMIT ?`, afterID, th.db.host.ID, limit)
}

// ReadyThumb reads the ready thumbnail of a group; ErrNotFound when it has
// none or the content is no group any more.
func (vw *View) ReadyThumb(ctx context.Context, algo string, sum []byte) (Thumb, error) {
	ts, err := vw.db.thumbs(ctx, "SELECT "+thumbCols+` FROM thumbnails t JOIN contents c ON c.id = t.content_id
		WHERE c.hash_algo = ? AND c.content_hash = ? AND t.status = 'ready' AND t.host_id = ? AND c.`+isGroup+
		vw.db.localCopy("c"), algo, sum, vw.db.host.ID)
	if err == nil && len(ts) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return Thumb{}, err
	}
	return ts[0], nil
}

// ThumbByID reads a thumbnail by id, whatever its status.
func (vw *View) ThumbByID(ctx context.Context, id int64) (Thumb, error) {
	ts, err := vw.db.thumbs(ctx, "SELECT "+thumbCols+` FROM thumbnails t JOIN contents c ON c.id = t.content_id
		WHERE t.id = ? AND t.host_id = ?`+vw.db.localCopy("c"), id, vw.db.host.ID)
	if err == nil && len(ts) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return Thumb{}, err
	}
	return ts[0], nil
}

// ThumbChange is a thumbnail whose status changed: its id, its group key
// and the position in the feed.
type ThumbChange struct {
	ID  int64
	Key string
	Seq int64
}

// ThumbChangesSince lists this host's thumbnails whose status changed
// after seq, oldest first.
func (vw *View) ThumbChangesSince(ctx context.Context, seq int64, limit int) ([]ThumbChange, error) {
	rows, err := vw.db.query(ctx, `SELECT t.id, c.hash_algo || ':' || lower(hex(c.content_hash)), t.change_seq
		FROM thumbnails t JOIN contents c ON c.id = t.content_id
		WHERE t.change_seq > ? AND t.host_id = ? ORDER BY t.change_seq LIMIT ?`, seq, vw.db.host.ID, limit)
	return collect("read thumbnail changes", rows, err, func(r rowScanner) (c ThumbChange, err error) {
		err = r.Scan(&c.ID, &c.Key, &c.Seq)
		return c, err
	})
}

// LastThumbChange is the position of the thumbnail change feed (of this
// host's thumbnails) and when it last moved (zero when none has changed).
func (vw *View) LastThumbChange(ctx context.Context) (int64, time.Time, error) {
	return vw.db.lastChange(ctx, "read thumbnail changes",
		"SELECT change_seq, updated_at FROM thumbnails WHERE host_id = ? ORDER BY change_seq DESC LIMIT 1", vw.db.host.ID)
}

func (db *DB) thumbs(ctx context.Context, q string, args ...any) ([]Thumb, error) {
	rows, err := db.query(ctx, q, args...)
	return collect("read thumbnails", rows, err, scanThumb)
}

// ThumbSource is a live copy of a group, as the index last saw it.
type ThumbSource struct {
	Path    string
	Size    int64
	MtimeNS int64
}

// ThumbSources lists up to 16 live copies of a group on this host, oldest
// first: the files a thumbnail may be made from here.
func (th *Thumbs) ThumbSources(ctx context.Context, contentID int64) ([]ThumbSource, error) {
	rows, err := th.db.query(ctx, `SELECT d.path, f.name, f.size, f.mtime_ns FROM contents c
		JOIN files f ON f.content_hash = c.content_hash AND f.missing = 0
		JOIN folders d ON d.id = f.folder_id
		WHERE c.id = ? AND f.root_id IN `+hostRoots("?")+` ORDER BY f.id LIMIT 16`, contentID, th.db.host.ID)
	return collect("read thumbnail sources", rows, err, func(r rowScanner) (s ThumbSource, err error) {
		var dir, name string
		err = r.Scan(&dir, &name, &s.Size, &s.MtimeNS)
		s.Path = naming.JoinPath(dir, name)
		return s, err
	})
}
