package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"
)

// Thumbnail statuses, as stored.
const (
	ThumbPending = "pending"
	ThumbRunning = "running"
	ThumbReady   = "ready"
	ThumbFailed  = "failed"
)

// Thumb is a thumbnail row with the key of its group.
type Thumb struct {
	ID, ContentID int64
	Key           string // <algo>:<hex> of the group
	Status        string
	MediaType     string
	Width, Height int
	BytesSize     int64
	ErrorCode     string
	ErrorMessage  string
	ErrorCount    int
	RetryAfter    time.Time
	Attempt       int64
	UpdatedAt     time.Time
	FinishedAt    time.Time
	// Group tells whether the content is still a duplicate group.
	Group bool
}

const thumbCols = `t.id, t.content_id, c.hash_algo || ':' || lower(hex(c.content_hash)), t.status, t.media_type,
	t.width, t.height, t.bytes_size, t.error_code, t.error_message, t.error_count, t.retry_after, t.attempt,
	t.updated_at, t.finished_at, c.` + isGroup

func scanThumb(r rowScanner) (Thumb, error) {
	var t Thumb
	var w, h, size, retry sql.NullInt64
	var code, msg sql.NullString
	var updated int64
	var finished sql.NullInt64
	err := r.Scan(&t.ID, &t.ContentID, &t.Key, &t.Status, &t.MediaType, &w, &h, &size, &code, &msg,
		&t.ErrorCount, &retry, &t.Attempt, &updated, &finished, &t.Group)
	t.Width, t.Height, t.BytesSize = int(w.Int64), int(h.Int64), size.Int64
	t.ErrorCode, t.ErrorMessage, t.RetryAfter = code.String, msg.String, fromMS(retry)
	t.UpdatedAt, t.FinishedAt = time.UnixMilli(updated), fromMS(finished)
	return t, err
}

// ThumbCandidate is a group without a thumbnail row, with the names of up
// to 8 of its copies to tell the media type by.
type ThumbCandidate struct {
	ContentID int64
	Seq       int64 // its change_seq
	Names     []string
}

// CandidateCursor is where a look at the candidates stands: a content id
// or, following the change feed, a (change_seq, content id) pair.
type CandidateCursor struct {
	BySeq bool
	Seq   int64
	ID    int64
}

// ThumbCandidates lists groups that have no thumbnail of this host's yet
// after cur, of those with a copy on this host (a host makes its
// thumbnails from its copies, into its cache): in content id order, or
// with cur.BySeq in the order of the change feed (the groups that changed
// since a look ended).
func (th *Thumbs) ThumbCandidates(ctx context.Context, cur CandidateCursor, limit int) ([]ThumbCandidate, error) {
	where, order := "c.id > ?2", "c.id"
	if cur.BySeq {
		where, order = "(c.change_seq, c.id) > (?1, ?2)", "c.change_seq, c.id"
	}
	rows, err := th.db.query(ctx, `SELECT c.id, c.change_seq, (SELECT group_concat(name, '/') FROM
			(SELECT f.name FROM files f WHERE f.content_hash = c.content_hash AND f.missing = 0 LIMIT 8))
		FROM contents c
		WHERE c.`+isGroup+` AND `+where+th.db.localCopy("c")+`
		  AND NOT EXISTS (SELECT 1 FROM thumbnails t WHERE t.content_id = c.id AND t.host_id = ?4)
		ORDER BY `+order+` LIMIT ?3`, cur.Seq, cur.ID, limit, th.db.host.ID)
	return collect("list thumbnail candidates", rows, err, func(r rowScanner) (c ThumbCandidate, err error) {
		var names sql.NullString
		err = r.Scan(&c.ContentID, &c.Seq, &names)
		if names.String != "" {
			c.Names = strings.Split(names.String, "/") // no name holds a slash
		}
		return c, err
	})
}

// Admission asks for the thumbnail of a group.
type Admission struct {
	ContentID int64
	MediaType string // image or video
}

// AdmitThumbs queues thumbnails of this host, each by one conditional
// insert: only while fewer than capacity of its thumbnails are pending or
// running, and only once per group. It stops at the first one refused for capacity. It returns how
// many it queued and how many of as it went through (len(as) unless the
// queue filled up).
func (th *Thumbs) AdmitThumbs(ctx context.Context, as []Admission, capacity int) (queued, done int, err error) {
	err = th.db.Write(ctx, func(tx *Tx) error {
		queued, done = 0, 0
		for _, a := range as {
			var full bool
			err := tx.queryRowP(`SELECT (SELECT count(*) FROM thumbnails
				WHERE status IN ('pending', 'running') AND host_id = ?2) >= ?1`, capacity, tx.host).Scan(&full)
			if err != nil {
				return classify("count queued thumbnails", err)
			}
			if full {
				return nil
			}
			res, err := tx.exec("admit thumbnail", `INSERT INTO thumbnails (content_id, media_type, created_at, updated_at, host_id)
				SELECT ?1, ?2, `+nowSQL+`, `+nowSQL+`, ?4
				 WHERE (SELECT count(*) FROM thumbnails WHERE status IN ('pending', 'running') AND host_id = ?4) < ?3
				ON CONFLICT DO NOTHING`, a.ContentID, a.MediaType, capacity, tx.host)
			if err != nil {
				return err
			}
			k, _ := res.RowsAffected()
			queued += int(k)
			done++
		}
		return nil
	})
	return queued, done, err
}

// QueueThumbs is the thumbnail queue: a stale running thumbnail goes back
// to pending, its lease fields cleared.
var QueueThumbs = &Queue{
	Table:   "thumbnails",
	Held:    "status = 'running'",
	Ready:   "status = 'pending'",
	Order:   "id",
	OnClaim: "status = 'running', started_at = " + nowSQL + ", updated_at = " + nowSQL,
	OnStale: "status = 'pending', updated_at = " + nowSQL,
}

// ClaimThumb requeues running thumbnails whose lease expired, then claims
// the oldest pending one of this host for owner. ErrNotFound when there is
// none.
func (th *Thumbs) ClaimThumb(ctx context.Context, owner string, ttl time.Duration) (Thumb, Lease, error) {
	t, l, err := claimRow(ctx, th.db, QueueThumbs, owner, ttl, func(tx *Tx, id int64) (Thumb, error) {
		t, err := scanThumb(tx.tx.QueryRowContext(tx.ctx, "SELECT "+thumbCols+
			" FROM thumbnails t JOIN contents c ON c.id = t.content_id WHERE t.id = ?", id))
		return t, classify("read thumbnail", err)
	}, "host_id = ?4", th.db.host.ID)
	if err != nil {
		return Thumb{}, Lease{}, err
	}
	return t, l, nil
}

// bumpThumbSeq moves the thumbnail change feed on; the mount watches it.
func (tx *Tx) bumpThumbSeq() (int64, error) {
	var seq int64
	err := tx.tx.QueryRowContext(tx.ctx, "UPDATE counters SET value = value + 1 WHERE name = 'thumb_seq' RETURNING value").Scan(&seq)
	return seq, classify("bump thumbnail sequence", err)
}

// FinishThumbReady records a made thumbnail (its file is in the cache).
func (th *Thumbs) FinishThumbReady(ctx context.Context, l Lease, width, height int, size int64) error {
	return th.db.Write(ctx, func(tx *Tx) error {
		seq, err := tx.bumpThumbSeq()
		if err != nil {
			return err
		}
		return tx.end(l, `status = 'ready', width = ?4, height = ?5, bytes_size = ?6, error_code = NULL,
			error_message = NULL, error_count = 0, retry_after = NULL, change_seq = ?7,
			finished_at = `+nowSQL+`, updated_at = `+nowSQL, width, height, size, seq)
	})
}

// FinishThumbFailed records a failure; the row is retried after retryAfter.
func (th *Thumbs) FinishThumbFailed(ctx context.Context, l Lease, code, msg string, retryAfter time.Duration) error {
	return th.db.Write(ctx, func(tx *Tx) error {
		seq, err := tx.bumpThumbSeq()
		if err != nil {
			return err
		}
		return tx.end(l, `status = 'failed', error_code = ?4, error_message = ?5, error_count = error_count + 1,
			retry_after = `+nowSQL+` + ?6, change_seq = ?7, finished_at = `+nowSQL+`, updated_at = `+nowSQL,
			code, msg, retryAfter.Milliseconds(), seq)
	})
}

// ReleaseThumb gives a claimed thumbnail back (running -> pending): the
// worker stopped before it finished, e.g. on shutdown.
func (th *Thumbs) ReleaseThumb(ctx context.Context, l Lease) error {
	return th.db.Write(ctx, func(tx *Tx) error {
		return tx.end(l, `status = 'pending', worker_id = NULL, updated_at = `+nowSQL)
	})
}

// RemakeThumb makes a ready thumbnail pending again, when its cache file
// is gone or damaged. The mount stops serving it at once.
func (th *Thumbs) RemakeThumb(ctx context.Context, id int64) error {
	return th.db.Write(ctx, func(tx *Tx) error {
		seq, err := tx.bumpThumbSeq()
		if err != nil {
			return err
		}
		_, err = tx.exec("remake thumbnail", `UPDATE thumbnails SET status = 'pending', width = NULL,
			height = NULL, bytes_size = NULL, change_seq = ?2, updated_at = `+nowSQL+`
			WHERE id = ?1 AND status = 'ready'`, id, seq)
		return err
	})
}

// RequeueFailedThumbs makes failed thumbnails of this host pending again: those whose
// retry_after has come, except those failed with one of the codes in keep
// (a cause that is known to be still there, such as a missing ffmpeg); or,
// with all, every failed one (the user asked for it).
func (th *Thumbs) RequeueFailedThumbs(ctx context.Context, all bool, keep ...string) (int, error) {
	var n int64
	err := th.db.Write(ctx, func(tx *Tx) error {
		res, err := tx.exec("requeue failed thumbnails", `UPDATE thumbnails SET status = 'pending',
			retry_after = NULL, updated_at = `+nowSQL+`
			WHERE status = 'failed' AND host_id = ?3 AND (CAST(?1 AS BIGINT) <> 0 OR (retry_after <= `+nowSQL+`
			  AND error_code NOT IN (`+tx.dialect.texts("?2")+`)))`, all, jsonStrings(keep), tx.host)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}

func jsonStrings(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v)
	return string(b)
}
