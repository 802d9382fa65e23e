package store

import "context"

// The folder groups are stored by writes of their own, after the fold
// writes that moved the folders' sums. A process killed between the two
// left groups that no later fold stored again, since nothing waited to be
// folded: a first index of 11,000 folders killed at random moments then
// reported no exact folder group in two runs of ten. So each fold
// write that may move a group counts itself in folder_folds, in its own
// transaction, and each store of the groups records in folder_groups_at
// how many fold writes it covers. While folder_folds is ahead, groups are
// owed, and the next UpdateFolderSigs finds them all again.

// noteFold counts a fold write that may move folder groups.
func (tx *Tx) noteFold() error {
	_, err := tx.exec("count fold", `INSERT INTO counters (name, value) VALUES ('folder_folds', 1)
		ON CONFLICT (name) DO UPDATE SET value = counters.value + 1`)
	return err
}

// foldCounts reads how many fold writes there were, and how many of them
// the stored folder groups cover.
func (db *DB) foldCounts(ctx context.Context) (folds, covered int64, err error) {
	err = db.queryRow(ctx, `SELECT coalesce((SELECT value FROM counters WHERE name = 'folder_folds'), 0),
		coalesce((SELECT value FROM counters WHERE name = 'folder_groups_at'), 0)`).Scan(&folds, &covered)
	return folds, covered, classify("read fold counts", err)
}

// coverFolds records, in the write that stores folder groups, that they
// cover the first folds fold writes.
func (tx *Tx) coverFolds(folds int64) error {
	_, err := tx.exec("record folds covered", `INSERT INTO counters (name, value) VALUES ('folder_groups_at', ?1)
		ON CONFLICT (name) DO UPDATE SET value = max(counters.value, ?1)`, folds)
	return err
}
