package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/dupefs/dupefs/store/naming"
)

// updateFolderGroups brings the stored folder groups up to date with the
// folders whose sums changed, class by class: the classes they left and
// joined, and the classes of the subfolders of every folder of those
// (whether a group is hidden depends on its parents' class). The work is
// that of the classes touched, never of the tree.
func (db *DB) updateFolderGroups(ctx context.Context, moves []sigMove, folds int64) error {
	ev := &classEval{db: db, ctx: ctx, classes: map[classKey]*folderClass{}, keys: map[int64]parentKey{}}
	keys := map[classKey]bool{}
	for _, m := range moves {
		if m.oldOK {
			keys[m.old] = true
		}
		if m.newOK {
			keys[m.new] = true
		}
	}
	var parents []int64
	for _, m := range moves {
		parents = append(parents, m.id)
	}
	for k := range keys {
		c, err := ev.class(k)
		if err != nil {
			return err
		}
		for _, f := range c.members {
			parents = append(parents, f.ID)
		}
	}
	children, err := db.childKeys(ctx, parents)
	if err != nil {
		return err
	}
	for _, k := range children {
		keys[k] = true
	}
	scope := map[string]bool{}
	var groups []FolderGroup
	for k := range keys {
		scope[string(k.sig[:])] = true
		g, ok, err := ev.group(k)
		if err != nil {
			return err
		}
		if ok {
			groups = append(groups, g)
		}
	}
	return db.storeFolderGroups(ctx, groups, scope, folds)
}

// childKeys reads the classes of the subfolders of the given folders.
func (db *DB) childKeys(ctx context.Context, parents []int64) ([]classKey, error) {
	rows, err := db.query(ctx, `SELECT tree_sig, tree_files, tree_bytes FROM folders
		WHERE parent_id IN (SELECT value FROM json_each(?)) AND tree_files > 0 AND tree_pending = 0 AND missing = 0`,
		jsonInts(dedupe(parents)))
	return collect("read subfolders", rows, err, func(r rowScanner) (k classKey, err error) {
		var sig []byte
		err = r.Scan(&sig, &k.files, &k.bytes)
		copy(k.sig[:], sig)
		return k, err
	})
}

// folderClass is the live folders of one class key, and those of them no
// other folder of the class contains (tops).
type folderClass struct {
	members, tops []FolderRef
	top           map[int64]bool
}

// kept: the class is a group (before the rule on parents).
func (c *folderClass) kept() bool { return len(c.tops) > 1 }

type parentKey struct {
	key classKey
	ok  bool
}

// classEval reads classes and parents once each.
type classEval struct {
	db      *DB
	ctx     context.Context
	classes map[classKey]*folderClass
	keys    map[int64]parentKey
}

func (e *classEval) class(k classKey) (*folderClass, error) {
	if c, ok := e.classes[k]; ok {
		return c, nil
	}
	rows, err := e.db.query(e.ctx, `SELECT id, coalesce(parent_id, 0), path, host_id FROM folders
		WHERE tree_sig = ? AND tree_files = ? AND tree_bytes = ? AND tree_files > 0 AND tree_pending = 0 AND missing = 0
		ORDER BY path`, k.sig[:], k.files, k.bytes)
	members, err := collect("read a folder class", rows, err, func(r rowScanner) (f FolderRef, err error) {
		err = r.Scan(&f.ID, &f.Parent, &f.Path, &f.Host)
		return f, err
	})
	if err != nil {
		return nil, err
	}
	c := &folderClass{members: members, top: map[int64]bool{}}
	for _, f := range members {
		inside := false
		for _, t := range c.tops { // by path: an ancestor comes first
			if t.Host == f.Host && naming.Below(t.Path, f.Path) {
				inside = true
				break
			}
		}
		if !inside {
			c.tops = append(c.tops, f)
			c.top[f.ID] = true
		}
	}
	e.classes[k] = c
	return c, nil
}

func (e *classEval) keyOf(id int64) (parentKey, error) {
	if k, ok := e.keys[id]; ok {
		return k, nil
	}
	var pk parentKey
	var sig []byte
	var pending int64
	var missing bool
	err := e.db.queryRow(e.ctx, `SELECT tree_sig, tree_files, tree_bytes, tree_pending, missing FROM folders WHERE id = ?`,
		id).Scan(&sig, &pk.key.files, &pk.key.bytes, &pending, &missing)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return pk, classify("read a folder", err)
	}
	copy(pk.key.sig[:], sig)
	pk.ok = err == nil && pk.key.files > 0 && pending == 0 && !missing
	e.keys[id] = pk
	return pk, nil
}

// group returns the group of class k, unless the class is no group or its
// folders' parents all lie in one group: of a duplicated tree only the
// highest level is reported.
func (e *classEval) group(k classKey) (FolderGroup, bool, error) {
	g := FolderGroup{Sig: append([]byte(nil), k.sig[:]...), Files: k.files, Bytes: k.bytes}
	c, err := e.class(k)
	if err != nil || !c.kept() {
		return g, false, err
	}
	g.Folders = c.tops
	var first classKey
	hidden := true
	for i, f := range c.tops {
		if f.Parent == 0 {
			hidden = false
			break
		}
		pk, err := e.keyOf(f.Parent)
		if err != nil {
			return g, false, err
		}
		if !pk.ok || (i > 0 && pk.key != first) {
			hidden = false
			break
		}
		first = pk.key
		pc, err := e.class(pk.key)
		if err != nil {
			return g, false, err
		}
		if !pc.kept() || !pc.top[f.Parent] {
			hidden = false
			break
		}
	}
	return g, !hidden, nil
}
