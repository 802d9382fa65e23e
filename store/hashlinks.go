package store

// A file of a size no other inode holds is never read (hash_status
// 'unique'), and its term in its folder's signature is its inode's. But a
// hard link made after its inode was hashed (when another inode shared its
// size) would then count as its inode while the older link counts as its
// content, and the two folders that hold the one inode would sum apart,
// where a first index of the same tree makes them one folder group. So a
// file left unique by a hash run takes the content hash another live row
// of this host records for its inode (same device, inode, size and mtime:
// what ReusableHash reuses), as a walk that read it would have.

// takeLinkHashes gives the files of the sizes the run looked at (plan_look)
// and left unique the content hash a row of their inode holds, noting the
// contents for their groups.
func (tx *Tx) takeLinkHashes() error {
	same := `FROM files s WHERE s.size = files.size AND s.ino = files.ino AND s.dev = files.dev
		AND s.mtime_ns = files.mtime_ns AND s.missing = 0 AND s.content_hash IS NOT NULL AND s.root_id IN ` + hostRoots("?1")
	rows, err := tx.queryP(`UPDATE OR IGNORE files SET hash_status = 'done', error = NULL,
		content_hash = (SELECT s.content_hash `+same+` LIMIT 1),
		prefix_hash = coalesce(prefix_hash, (SELECT s.prefix_hash `+same+` AND s.prefix_hash IS NOT NULL LIMIT 1))
		WHERE hash_status = 'unique' AND missing = 0 AND content_hash IS NULL
		  AND size IN (SELECT size FROM temp.plan_look) AND root_id IN `+hostRoots("?1")+`
		  AND EXISTS (SELECT 1 `+same+`)
		RETURNING content_hash`, tx.host)
	sums, err := collect("take the hashes of links", rows, err, func(r rowScanner) (sum []byte, err error) {
		err = r.Scan(&sum)
		return sum, err
	})
	for _, s := range sums {
		tx.noteContent(tx.algo, s)
	}
	return err
}
