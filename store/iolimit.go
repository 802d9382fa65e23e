package store

import (
	"context"
	"time"
)

// The global I/O limiter: one row per bucket in io_rate_limits, shared by
// every process that opens the index; a reader moves the bucket's
// next_available_at_ms forward by the cost of its read, inserting the row
// when it is absent, so all processes together keep one rate.

// IOBucketThumbs is the bucket every thumbnail read goes through.
const IOBucketThumbs = "thumbnail_io_global"

// ReserveIO takes the next slot of a rate-limit bucket shared by every
// process (io_rate_limits) and returns when it starts: the caller waits
// until then before reading. A reservation of cost moves the bucket on by
// cost, so slots are cost apart: a caller that reads n bytes at a rate of r
// bytes a second reserves n/r.
func (jq *Jobs) ReserveIO(ctx context.Context, bucket string, cost time.Duration) (time.Time, error) {
	var at int64
	err := jq.db.Write(ctx, func(tx *Tx) error {
		if _, err := tx.exec("bootstrap I/O bucket", `INSERT INTO io_rate_limits (bucket_key, next_available_at_ms, updated_at)
			VALUES (?, `+nowSQL+`, `+nowSQL+`) ON CONFLICT DO NOTHING`, bucket); err != nil {
			return err
		}
		err := tx.queryRowP(`UPDATE io_rate_limits
			SET next_available_at_ms = max(next_available_at_ms, `+nowSQL+`) + ?2, updated_at = `+nowSQL+`
			WHERE bucket_key = ?1 RETURNING next_available_at_ms - ?2`, bucket, cost.Milliseconds()).Scan(&at)
		return classify("reserve I/O", err)
	})
	return time.UnixMilli(at), err
}
