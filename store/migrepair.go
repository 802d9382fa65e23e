package store

import (
	"context"
	"database/sql"
	"strings"
)

// Migrations are never edited once landed, but some of the early ones were
// edited before that rule was kept, so an index made by a build from
// between those edits has an older shape. Migration 0007 brings it in line
// (migrations/0007_repair_edited.sql). A repair here runs in a migration's
// transaction just before its SQL, for what SQL cannot do only where it is
// needed (add or drop a column that may or may not exist, rebuild an index
// only if its definition is an older one), and does nothing on an index of
// the fresh shape.
var repairs = map[int]func(ctx context.Context, tx *sql.Tx) error{
	6: repairBefore0006,
	7: repairBefore0007,
}

// repairBefore0006: 0006 drops actions_open and copies trash_path, both
// added to 0004 after it first landed. An index from before those edits
// gets them first, or 0006 fails on it.
func repairBefore0006(ctx context.Context, tx *sql.Tx) error {
	has, err := hasColumn(ctx, tx, "actions", "trash_path")
	if err != nil {
		return err
	}
	if !has {
		if _, err := tx.ExecContext(ctx, "ALTER TABLE actions ADD COLUMN trash_path TEXT"); err != nil {
			return classify("repair: add actions.trash_path", err)
		}
	}
	_, err = tx.ExecContext(ctx, "CREATE INDEX IF NOT EXISTS actions_open ON actions (plan_id) WHERE state IN ('planned', 'leased', 'prepared')")
	return classify("repair: actions_open", err)
}

// The definitions 0001 and 0005 give files_content and folders_sig today.
const (
	contentIndexSQL = "CREATE INDEX files_content ON files (content_hash, missing, name) WHERE content_hash IS NOT NULL"
	sigIndexDef     = "CREATE INDEX folders_sig ON folders (tree_sig) WHERE tree_files > 0 AND missing = 0"
)

// repairBefore0007 rebuilds files_content and folders_sig where they have
// an older definition, and drops the layout signatures 0005 no longer
// makes. An index dropped for a bulk load or a first fold stays dropped
// (they build it again when they end); the definition a bulk load recorded
// to build again is brought in line too.
func repairBefore0007(ctx context.Context, tx *sql.Tx) error {
	for _, def := range []struct{ name, sql string }{{"files_content", contentIndexSQL}, {"folders_sig", sigIndexDef}} {
		var have string
		err := tx.QueryRowContext(ctx, "SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = ?", def.name).Scan(&have)
		if err == sql.ErrNoRows || err == nil && sameSQL(have, def.sql) {
			continue
		}
		if err != nil {
			return classify("repair: read "+def.name, err)
		}
		if _, err := tx.ExecContext(ctx, "DROP INDEX "+def.name); err != nil {
			return classify("repair: drop "+def.name, err)
		}
		if _, err := tx.ExecContext(ctx, def.sql); err != nil {
			return classify("repair: build "+def.name, err)
		}
	}
	_, err := tx.ExecContext(ctx, "UPDATE settings SET value = json_set(value, '$.files_content', ?) WHERE key = ? AND json_extract(value, '$.files_content') IS NOT NULL", contentIndexSQL, bulkKey)
	if err != nil {
		return classify("repair: bulk load definitions", err)
	}
	if _, err := tx.ExecContext(ctx, "DROP INDEX IF EXISTS folders_layout"); err != nil {
		return classify("repair: drop folders_layout", err)
	}
	for _, col := range []string{"own_layout", "tree_layout"} {
		has, err := hasColumn(ctx, tx, "folders", col)
		if err != nil {
			return err
		}
		if has {
			if _, err := tx.ExecContext(ctx, "ALTER TABLE folders DROP COLUMN "+col); err != nil {
				return classify("repair: drop folders."+col, err)
			}
		}
	}
	return nil
}

func hasColumn(ctx context.Context, tx *sql.Tx, table, col string) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?", table, col).Scan(&n)
	return n > 0, classify("repair: read columns of "+table, err)
}

// sameSQL compares two statements with their whitespace normalized.
func sameSQL(a, b string) bool {
	return strings.Join(strings.Fields(a), " ") == strings.Join(strings.Fields(b), " ")
}
