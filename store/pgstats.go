package store

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The planner's statistics on PostgreSQL. A first index gathers those of
// files when its bulk load ends, and those of folders when their sums are
// first written: a table analyzed empty looks empty, and the plans of the
// statements that follow would be wrong. A full ANALYZE samples 30k rows:
// 150–230 ms of files of /usr (80 of folders), on the writer's path. There
// it samples 3k (a statistics target of 10: 16 ms), enough for the plans
// that follow, and the full one runs behind on a session of its own, once
// the write that asked commits, beside the hash job and the fold. Left
// coarse, the statistics would stay so until a tenth of the table changed
// and autovacuum analyzed it again (of files of /usr: 6.6k sizes for 27k,
// 3k folders for 14.6k). DB.Close waits for it, unless the context the
// store was opened with ends (Ctrl-C, SIGTERM): a process interrupted or
// killed meanwhile leaves the coarse ones, which autovacuum replaces in
// time.

// behindTimeout bounds a statement run behind, which Close waits for.
const behindTimeout = time.Minute

// analyze gathers coarse statistics of table in the transaction, and
// asks for the full ones behind once it commits.
func (tx *Tx) analyze(table string) error {
	if err := tx.analyzeCoarse(table); err != nil {
		return err
	}
	tx.analyzeBehind(table)
	return nil
}

// analyzeCoarse gathers coarse statistics of table in the transaction.
func (tx *Tx) analyzeCoarse(table string) error {
	for _, q := range []string{"SET LOCAL default_statistics_target = 10", "ANALYZE " + table,
		"SET LOCAL default_statistics_target = DEFAULT"} {
		if _, err := tx.exec("gather statistics", q); err != nil {
			return err
		}
	}
	return nil
}

// analyzeBehind asks for the full statistics of table behind, once the
// transaction commits. A first fold asks with the write that builds the
// indexes on folders again: asked with the fold's own write, the ANALYZE
// and those builds waited for each other, each taking folders against the
// other.
func (tx *Tx) analyzeBehind(table string) {
	tx.after = append(tx.after, "ANALYZE "+table)
}

// behind runs statements off the writer's path, each batch on a session
// of its own; errors are dropped (statistics only: the coarse ones stand).
type behind struct {
	wg sync.WaitGroup
	// life is the context the store was opened with: once it ends, the
	// statements under way are cancelled, and Close waits no longer for
	// them (a full ANALYZE of a large index on a slow disk may outlast
	// behindTimeout, and a Ctrl-C waited for it).
	life context.Context
}

// run starts stmts on a new session of the database dsn names.
func (b *behind) run(dsn string, stmts []string) {
	b.wg.Go(func() {
		life := b.life
		if life == nil {
			life = context.Background()
		}
		ctx, cancel := context.WithTimeout(life, behindTimeout)
		defer cancel()
		cfg, err := sessionConfig(dsn)
		if err != nil {
			return
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		for _, q := range stmts {
			if _, err := conn.Exec(ctx, q); err != nil {
				return
			}
		}
	})
}

// wait waits for the statements under way.
func (b *behind) wait() { b.wg.Wait() }
