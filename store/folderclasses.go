package store

import (
	"context"
	"strings"

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
	if err := ev.prefetch(keys); err != nil {
		return err
	}
	for k := range keys {
		for _, f := range ev.classes[k].members {
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
	if err := ev.prefetch(keys); err != nil {
		return err
	}
	if err := ev.prefetchParents(keys); err != nil {
		return err
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
	if err := e.prefetch(map[classKey]bool{k: true}); err != nil {
		return nil, err
	}
	return e.classes[k], nil
}

// classBatch is how many classes one statement reads (a variable for
// tests): on PostgreSQL a second host's first index of /usr/share read
// 8k classes one round trip each.
var classBatch = 64

// classesSQL reads the live folders of classBatch signatures (the
// partial index folders_sig finds them), ordered by path.
func classesSQL() string {
	return `SELECT id, coalesce(parent_id, 0), path, host_id, tree_sig, tree_files, tree_bytes FROM folders
	WHERE tree_sig IN (?` + strings.Repeat(", ?", classBatch-1) + `)
	AND tree_files > 0 AND tree_pending = 0 AND missing = 0
	ORDER BY path, host_id`
}

// prefetch reads the classes of keys not read yet, classBatch at a time.
func (e *classEval) prefetch(keys map[classKey]bool) error {
	var todo []classKey
	for k := range keys {
		if _, ok := e.classes[k]; !ok {
			todo = append(todo, k)
		}
	}
	args := make([]any, classBatch)
	for len(todo) > 0 {
		chunk := todo[:min(len(todo), classBatch)]
		todo = todo[len(chunk):]
		want := make(map[classKey][]FolderRef, len(chunk))
		for i := range args {
			k := chunk[min(i, len(chunk)-1)] // the last one again: one statement whatever the count
			args[i] = k.sig[:]
			want[k] = nil
		}
		rows, err := e.db.query(e.ctx, classesSQL(), args...)
		if err != nil {
			return classify("read folder classes", err)
		}
		for rows.Next() {
			var f FolderRef
			var sig []byte
			var k classKey
			if err := rows.Scan(&f.ID, &f.Parent, &f.Path, &f.Host, &sig, &k.files, &k.bytes); err != nil {
				rows.Close()
				return classify("read folder classes", err)
			}
			copy(k.sig[:], sig)
			if members, ok := want[k]; ok {
				want[k] = append(members, f)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return classify("read folder classes", err)
		}
		for k, members := range want {
			e.classes[k] = newFolderClass(members)
		}
	}
	return nil
}

// newFolderClass is the class of members, by path: its tops are those no
// other member of their host contains.
func newFolderClass(members []FolderRef) *folderClass {
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
	return c
}

// prefetchParents reads, a batch at a time, what group asks of the classes
// keys that are groups: the class keys of their tops' parents, and those
// classes.
func (e *classEval) prefetchParents(keys map[classKey]bool) error {
	var ids []int64
	for k := range keys {
		if c := e.classes[k]; c != nil && c.kept() {
			for _, f := range c.tops {
				if _, ok := e.keys[f.Parent]; f.Parent != 0 && !ok {
					ids = append(ids, f.Parent)
				}
			}
		}
	}
	if err := e.readKeys(dedupe(ids)); err != nil {
		return err
	}
	parents := map[classKey]bool{}
	for _, pk := range e.keys {
		if pk.ok {
			parents[pk.key] = true
		}
	}
	return e.prefetch(parents)
}

// readKeys reads the class keys of the folders ids, 500 to a statement; a
// folder gone has no class.
func (e *classEval) readKeys(ids []int64) error {
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 500)]
		ids = ids[len(chunk):]
		rows, err := e.db.query(e.ctx, `SELECT id, tree_sig, tree_files, tree_bytes, tree_pending, missing FROM folders
			WHERE id IN (SELECT value FROM json_each(?))`, jsonInts(chunk))
		if err != nil {
			return classify("read folders", err)
		}
		for rows.Next() {
			var id, pending int64
			var sig []byte
			var missing bool
			var pk parentKey
			if err := rows.Scan(&id, &sig, &pk.key.files, &pk.key.bytes, &pending, &missing); err != nil {
				rows.Close()
				return classify("read folders", err)
			}
			copy(pk.key.sig[:], sig)
			pk.ok = pk.key.files > 0 && pending == 0 && !missing
			e.keys[id] = pk
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return classify("read folders", err)
		}
		for _, id := range chunk {
			if _, ok := e.keys[id]; !ok {
				e.keys[id] = parentKey{} // gone
			}
		}
	}
	return nil
}

func (e *classEval) keyOf(id int64) (parentKey, error) {
	if k, ok := e.keys[id]; ok {
		return k, nil
	}
	err := e.readKeys([]int64{id})
	return e.keys[id], err
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
