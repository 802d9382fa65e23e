package store

import (
	"context"
	"database/sql"
	"time"
)

// The queries of /by-folder in the mounted view: the exact folder groups
// rebuildFolderGroups keeps, in keyset pages.

// FolderGroupInfo is an exact folder group as the view shows it.
type FolderGroupInfo struct {
	ID        int64
	Sig       []byte
	Files     int64 // of one folder
	Bytes     int64
	Folders   int64
	ChangedAt time.Time
}

const folderGroupCols = "id, sig, files, bytes, folders, changed_at"

func scanFolderGroups(rows *sql.Rows, err error) ([]FolderGroupInfo, error) {
	return collect("list folder groups", rows, err, func(r rowScanner) (g FolderGroupInfo, err error) {
		var at int64
		err = r.Scan(&g.ID, &g.Sig, &g.Files, &g.Bytes, &g.Folders, &at)
		g.ChangedAt = time.UnixMilli(at)
		return g, err
	})
}

func oneFolderGroup(gs []FolderGroupInfo, err error) (FolderGroupInfo, error) {
	if err == nil && len(gs) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return FolderGroupInfo{}, err
	}
	return gs[0], nil
}

// FolderGroupsPage lists the live folder groups by id, after afterID.
func (vw *View) FolderGroupsPage(ctx context.Context, afterID int64, limit int) ([]FolderGroupInfo, error) {
	return scanFolderGroups(vw.db.query(ctx, `SELECT `+folderGroupCols+` FROM folder_groups
		WHERE folders > 1 AND id > ? ORDER BY id LIMIT ?`, afterID, limit))
}

// FolderGroupBySig finds a live folder group by its signature.
func (vw *View) FolderGroupBySig(ctx context.Context, sig []byte) (FolderGroupInfo, error) {
	return oneFolderGroup(scanFolderGroups(vw.db.query(ctx, `SELECT `+folderGroupCols+` FROM folder_groups
		WHERE sig = ? AND folders > 1`, sig)))
}

// FolderGroupByID finds a live folder group by id.
func (vw *View) FolderGroupByID(ctx context.Context, id int64) (FolderGroupInfo, error) {
	return oneFolderGroup(scanFolderGroups(vw.db.query(ctx, `SELECT `+folderGroupCols+` FROM folder_groups
		WHERE id = ? AND folders > 1`, id)))
}

// FolderMember is a folder of a folder group. First is set when no folder
// of the group with a lower id has the same basename.
type FolderMember struct {
	GroupID  int64
	FolderID int64
	Name     string
	First    bool
	Path     string
	Host     string // the host whose disk holds it; "" for this host
}

// folderMemberCols are the columns of folder_group_members m and folders
// d scanFolderMembers reads.
func (db *DB) folderMemberCols() string {
	return `m.group_id, m.folder_id, m.name,
	NOT EXISTS (SELECT 1 FROM folder_group_members o WHERE o.group_id = m.group_id AND o.name = m.name
	              AND o.folder_id < m.folder_id),
	d.path, ` + db.copyHost("d")
}

func scanFolderMembers(rows *sql.Rows, err error) ([]FolderMember, error) {
	return collect("list folders of a group", rows, err, func(r rowScanner) (m FolderMember, err error) {
		err = r.Scan(&m.GroupID, &m.FolderID, &m.Name, &m.First, &m.Path, &m.Host)
		return m, err
	})
}

// FolderMembersPage lists a group's folders by name, then id, after the
// folder afterID (0: from the start).
func (vw *View) FolderMembersPage(ctx context.Context, groupID, afterID int64, limit int) ([]FolderMember, error) {
	return scanFolderMembers(vw.db.query(ctx, `SELECT `+vw.db.folderMemberCols()+`
		FROM folder_group_members m JOIN folders d ON d.id = m.folder_id
		WHERE m.group_id = ?1 AND (?2 = 0 OR (m.name, m.folder_id) >
		  ((SELECT name FROM folder_group_members WHERE group_id = ?1 AND folder_id = ?2), ?2))
		ORDER BY m.name, m.folder_id LIMIT ?3`, groupID, afterID, limit))
}

// FolderMemberByName finds the first folder (lowest id) of a group with
// that basename.
func (vw *View) FolderMemberByName(ctx context.Context, groupID int64, name string) (FolderMember, error) {
	ms, err := scanFolderMembers(vw.db.query(ctx, `SELECT `+vw.db.folderMemberCols()+`
		FROM folder_group_members m JOIN folders d ON d.id = m.folder_id
		WHERE m.group_id = ? AND m.name = ? ORDER BY m.folder_id LIMIT 1`, groupID, name))
	if err == nil && len(ms) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return FolderMember{}, err
	}
	return ms[0], nil
}

// FolderMemberByID finds a folder of a group by its id.
func (vw *View) FolderMemberByID(ctx context.Context, groupID, folderID int64) (FolderMember, error) {
	ms, err := scanFolderMembers(vw.db.query(ctx, `SELECT `+vw.db.folderMemberCols()+`
		FROM folder_group_members m JOIN folders d ON d.id = m.folder_id
		WHERE m.group_id = ? AND m.folder_id = ?`, groupID, folderID))
	if err == nil && len(ms) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return FolderMember{}, err
	}
	return ms[0], nil
}

// FolderMemberOf finds a folder that is in a live group, with its group.
func (vw *View) FolderMemberOf(ctx context.Context, folderID int64) (FolderMember, error) {
	ms, err := scanFolderMembers(vw.db.query(ctx, `SELECT `+vw.db.folderMemberCols()+`
		FROM folder_group_members m JOIN folders d ON d.id = m.folder_id
		WHERE m.folder_id = ? LIMIT 1`, folderID))
	if err == nil && len(ms) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return FolderMember{}, err
	}
	return ms[0], nil
}

// FolderChange is a folder group that appeared, changed or went.
type FolderChange struct {
	Seq  int64
	ID   int64
	Sig  []byte
	Live bool
}

// FolderChangesSince returns the folder groups changed after seq, in order.
func (vw *View) FolderChangesSince(ctx context.Context, seq int64, limit int) ([]FolderChange, error) {
	rows, err := vw.db.query(ctx, `SELECT change_seq, id, sig, folders > 1 FROM folder_groups
		WHERE change_seq > ? ORDER BY change_seq LIMIT ?`, seq, limit)
	return collect("read folder changes", rows, err, func(r rowScanner) (c FolderChange, err error) {
		err = r.Scan(&c.Seq, &c.ID, &c.Sig, &c.Live)
		return c, err
	})
}

// LastFolderChange returns the latest folder change and when it happened.
func (vw *View) LastFolderChange(ctx context.Context) (int64, time.Time, error) {
	return vw.db.lastChange(ctx, "read last folder change",
		`SELECT change_seq, changed_at FROM folder_groups ORDER BY change_seq DESC LIMIT 1`)
}

// FolderGroups reads the exact folder groups (layout ignored) the last
// fold confirmed, of folders of at least minBytes, largest first (bytes in
// all but one folder).
func (fo *Folders) FolderGroups(ctx context.Context, minBytes int64) ([]FolderGroup, error) {
	rows, err := fo.db.query(ctx, `SELECT g.id, g.sig, g.files, g.bytes, d.id, coalesce(d.parent_id, 0), d.path, d.host_id,
		`+fo.db.copyHost("d")+`
		FROM folder_groups g JOIN folder_group_members m ON m.group_id = g.id JOIN folders d ON d.id = m.folder_id
		WHERE g.folders > 1 AND g.bytes >= ?
		ORDER BY g.bytes * (g.folders - 1) DESC, g.sig, d.path, d.host_id`, minBytes)
	if err != nil {
		return nil, classify("read folder groups", err)
	}
	defer rows.Close()
	var out []FolderGroup
	last := int64(-1)
	for rows.Next() {
		var id int64
		var g FolderGroup
		var f FolderRef
		if err := rows.Scan(&id, &g.Sig, &g.Files, &g.Bytes, &f.ID, &f.Parent, &f.Path, &f.Host, &f.On); err != nil {
			return nil, classify("read folder groups", err)
		}
		if id != last {
			out = append(out, g)
			last = id
		}
		out[len(out)-1].Folders = append(out[len(out)-1].Folders, f)
	}
	return out, classify("read folder groups", rows.Err())
}
