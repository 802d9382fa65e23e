package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// PlanSpec is a plan to record: the op, the options the command ran with,
// and the run that will work it.
type PlanSpec struct {
	Op      string
	Options any
	// Worker is the process that runs the plan; its heartbeats renew the
	// plan's lease (LeaseTTL) while it runs.
	Worker   string
	LeaseTTL time.Duration
	// UID and HomeTrash are the user the plan runs as and the home Trash
	// it moves copies to, for whoever reconciles it after a crash.
	UID       int
	HomeTrash string
}

// Refused is a unit of a plan (a group of files or of folders) the store
// did not record, and why.
type Refused struct {
	Unit   string
	Path   string // the file whose role refused it
	Reason string
}

// Existing is an action an earlier plan did already for a key a new plan
// wanted (a copy deduplicated before): it is not made again.
type Existing struct {
	Spec     ActionSpec
	ActionID int64
	PlanID   int64
}

// PlanResult is what CreatePlan recorded.
type PlanResult struct {
	ID      int64
	Actions int        // actions recorded
	Done    []Existing // done already by an earlier plan
	Refused []Refused  // units left out: recording them would cross a live action
	Retired int        // done actions of earlier plans retired: their copy is back
}

// CreatePlan records a plan and its actions in one write, unit by unit,
// under the rule of roles.go. The kept files of every unit are pinned
// before any copy is added, so within the plan too no file is both kept
// and acted on. A unit is refused, whole, when its kept file is a live
// copy, or a copy of it is kept or acted on by a live action (of this
// plan or any other); the refusal names the file and the plan holding it.
// A done action whose keep role stands in the way is retired when its
// copy is back in the index (its path holds the content again). A key
// done already by dedupe is not made again (Done).
func (lg *Ledger) CreatePlan(ctx context.Context, ps PlanSpec, specs []ActionSpec) (PlanResult, error) {
	opts, err := json.Marshal(ps.Options)
	if err != nil {
		return PlanResult{}, fmt.Errorf("plan options: %w", err)
	}
	var res PlanResult
	err = lg.db.Write(ctx, func(tx *Tx) error {
		res = PlanResult{}
		if err := tx.tx.QueryRowContext(tx.ctx, `INSERT INTO plans (op, options, created_at, worker_id, lease_expires_at,
			uid, home_trash, host_id) VALUES (?, ?, `+nowSQL+`, ?, `+nowSQL+` + ?, ?, ?, ?) RETURNING id`,
			ps.Op, string(opts), nullStr(ps.Worker), ps.LeaseTTL.Milliseconds(), ps.UID, nullStr(ps.HomeTrash), tx.host).Scan(&res.ID); err != nil {
			return classify("record plan", err)
		}
		p := &planner{tx: tx, res: &res, kept: map[string]string{}, acted: map[string]bool{}}
		if err := p.record(specs); err != nil {
			return err
		}
		// A plan that recorded no action (every unit refused, or done
		// already) is over as soon as it is made.
		return tx.CloseDonePlans()
	})
	return res, err
}

// PreviewPlan says what CreatePlan would record of specs, and changes
// nothing (a dry run; the index may be open read-only). Done actions it
// would retire are counted in Retired. ended maps the actions the real
// run's reconcile ends first to the state each ends in: their roles count
// as that state holds them.
func (lg *Ledger) PreviewPlan(ctx context.Context, specs []ActionSpec, ended map[int64]string) (PlanResult, error) {
	var res PlanResult
	err := lg.db.read(ctx, func(tx *Tx) error {
		p := &planner{tx: tx, res: &res, kept: map[string]string{}, acted: map[string]bool{}, dry: true, ended: ended}
		return p.record(specs)
	})
	return res, err
}

// planner records the units of one plan inside its write.
type planner struct {
	tx    *Tx
	res   *PlanResult
	kept  map[string]string // kept file -> the unit keeping it, this plan
	acted map[string]bool   // copies of the units recorded so far
	dry   bool              // decide only: write nothing
	// ended are the actions a dry run's reconcile would end first, and
	// the state each would end in (see PreviewPlan).
	ended map[int64]string
	// retired are the done actions retired so far (dry: that would be).
	retired map[int64]bool
}

type unit struct {
	key   string
	specs []ActionSpec
}

func (p *planner) record(specs []ActionSpec) error {
	var units []*unit
	byKey := map[string]*unit{}
	for _, s := range specs {
		u := byKey[s.Unit]
		if u == nil {
			u = &unit{key: s.Unit}
			byKey[s.Unit] = u
			units = append(units, u)
		}
		u.specs = append(u.specs, s)
	}
	// Keepers first: a unit whose kept file another live action is acting
	// on keeps nothing.
	var live []*unit
	for _, u := range units {
		r, err := p.hostRefusal(u)
		if err == nil && r == nil {
			r, err = p.keepRefusal(u)
		}
		if err != nil {
			return err
		} else if r != nil {
			p.res.Refused = append(p.res.Refused, *r)
			continue
		}
		for _, s := range u.specs {
			p.kept[s.Keep.Path] = u.key
		}
		live = append(live, u)
	}
	for _, u := range live {
		r, err := p.copyRefusal(u)
		if err != nil {
			return err
		}
		if r == nil {
			r, err = p.insert(u)
			if err != nil {
				return err
			}
		}
		if r != nil {
			p.res.Refused = append(p.res.Refused, *r)
		}
	}
	return nil
}

// hostRefusal says why u names a file of another host, or nil: a host
// keeps and acts on its own files only (in an index of one host, every
// file is its).
func (p *planner) hostRefusal(u *unit) (*Refused, error) {
	if !p.tx.dialect.manyHosts {
		return nil, nil
	}
	for _, s := range u.specs {
		for _, f := range []FileRef{s.Keep, s.Copy} {
			var host int64
			var name string
			err := p.tx.queryRowP(`SELECT r.host_id, coalesce(h.name, '') FROM files f JOIN roots r ON r.id = f.root_id
				LEFT JOIN hosts h ON h.id = r.host_id WHERE f.id = ?`, f.FileID).Scan(&host, &name)
			if errors.Is(err, sql.ErrNoRows) {
				return &Refused{Unit: u.key, Path: f.Path, Reason: naming.EscapePath(f.Path) + " is not in the index"}, nil
			}
			if err != nil {
				return nil, classify("read a file's host", err)
			}
			if host != p.tx.host {
				return &Refused{Unit: u.key, Path: f.Path, Reason: fmt.Sprintf("%s is a file of host %s: a host keeps and acts on its own files only",
					naming.EscapePath(f.Path), name)}, nil
			}
		}
	}
	return nil, nil
}

// keepRefusal says why u cannot keep its files, or nil.
func (p *planner) keepRefusal(u *unit) (*Refused, error) {
	for _, s := range u.specs {
		h, err := p.holder(s.Keep.Path)
		if err != nil {
			return nil, err
		}
		if h != nil && h.Role == RoleCopy {
			return &Refused{Unit: u.key, Path: s.Keep.Path, Reason: fmt.Sprintf("plan %d is acting on %s (its %s)",
				h.PlanID, naming.EscapePath(s.Keep.Path), h.Op)}, nil
		}
	}
	return nil, nil
}

// copyRefusal says why u cannot act on its copies, or nil. It retires
// done actions whose keep role on a copy no longer protects anything.
func (p *planner) copyRefusal(u *unit) (*Refused, error) {
	for _, s := range u.specs {
		c := s.Copy.Path
		if k, ok := p.kept[c]; ok {
			reason := "this plan keeps " + naming.EscapePath(c)
			if k != u.key {
				reason += " for " + k
			}
			return &Refused{Unit: u.key, Path: c, Reason: reason}, nil
		}
		if p.acted[c] {
			return &Refused{Unit: u.key, Path: c, Reason: "another group of this plan acts on " + naming.EscapePath(c)}, nil
		}
		if err := p.retireRestored(c); err != nil {
			return nil, err
		}
		h, err := p.holder(c)
		if err != nil {
			return nil, err
		}
		if h == nil {
			continue
		}
		reason := fmt.Sprintf("plan %d keeps %s", h.PlanID, naming.EscapePath(c))
		switch {
		case h.Role == RoleCopy:
			reason = fmt.Sprintf("plan %d is acting on %s (its %s)", h.PlanID, naming.EscapePath(c), h.Op)
		case h.State == ActDone && h.Op == OpSymlink:
			reason += fmt.Sprintf(": %s is a symlink to it", naming.EscapePath(h.Other))
		case h.State == ActDone:
			reason += fmt.Sprintf(": it holds the only copy of %s, which that plan removed", naming.EscapePath(h.Other))
		}
		return &Refused{Unit: u.key, Path: c, Reason: reason}, nil
	}
	return nil, nil
}

// retireRestored retires the done actions that keep path only for a copy
// that is back: the index has their copy's row live again with the
// content they removed.
func (p *planner) retireRestored(path string) error {
	if role, err := p.tx.role(path); err != nil || role != RoleKeep {
		return err
	}
	// keepRoleSQL, whose columns name a's, lets the lookup use the index
	// of keep roles.
	rows, err := p.tx.queryP(`SELECT a.id FROM actions a JOIN files f ON f.id = a.copy_file_id
		WHERE a.keep_path = ? AND `+keepRoleSQL+` AND a.state = 'done'
		  AND a.op IN ('symlink', 'trash', 'unlink') AND a.plan_id IN (SELECT id FROM plans WHERE host_id = ?)
		  AND f.missing = 0 AND f.content_hash = a.content_hash`, path, p.tx.host)
	ids, err := collect("find restored copies", rows, err, scanValue[int64])
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := p.retire(id); err != nil {
			return err
		}
	}
	return nil
}

// retire retires a done action (dry: notes that it would).
func (p *planner) retire(id int64) error {
	if p.retired == nil {
		p.retired = map[int64]bool{}
	}
	if p.retired[id] {
		return nil
	}
	if !p.dry {
		if err := p.tx.retire(id, "its copy is back at its path (restored outside dupefs): nothing left to undo"); err != nil {
			return err
		}
	}
	p.retired[id] = true
	p.res.Retired++
	return nil
}

// holder is the first live action holding a role on path, but for those
// retired (or, dry, that would be) and those whose end (dry) gives the
// role up; nil for none.
func (p *planner) holder(path string) (*RoleHolder, error) {
	hs, err := p.tx.roleHolders(path, len(p.retired)+len(p.ended)+1)
	if err != nil {
		return nil, err
	}
	for _, h := range hs {
		if p.retired[h.ActionID] {
			continue
		}
		if st, ok := p.ended[h.ActionID]; ok {
			if (h.Role == RoleCopy && !holdsCopy(st)) || (h.Role == RoleKeep && !holdsKeep(h.Op, st)) {
				continue
			}
			h.State = st
		}
		return &h, nil
	}
	return nil, nil
}

// insert records u's actions and their roles, all or none; a role taken
// meanwhile (another process's plan, on a server that lets two write at
// once) refuses the unit.
func (p *planner) insert(u *unit) (*Refused, error) {
	tx := p.tx
	if p.dry {
		return p.insertUnit(u)
	}
	if _, err := tx.exec("begin a unit", "SAVEPOINT plan_unit"); err != nil {
		return nil, err
	}
	refused, err := p.insertUnit(u)
	if err == nil && refused == nil {
		_, err = tx.exec("end a unit", "RELEASE plan_unit")
		return nil, err
	}
	if _, rerr := tx.exec("undo a unit", "ROLLBACK TO plan_unit"); rerr != nil {
		return nil, errors.Join(err, rerr)
	}
	if _, rerr := tx.exec("end a unit", "RELEASE plan_unit"); rerr != nil {
		return nil, errors.Join(err, rerr)
	}
	if errors.Is(err, ErrRoleTaken) {
		return &Refused{Unit: u.key, Reason: err.Error()}, nil
	}
	return refused, err
}

func (p *planner) insertUnit(u *unit) (*Refused, error) {
	tx := p.tx
	var done []Existing
	n := 0
	for _, s := range u.specs {
		k := tx.idemKey(s)
		var id, plan int64
		var state string
		err := tx.queryRowP(`SELECT id, plan_id, state FROM actions WHERE idem_key = ?
			AND state IN ('planned', 'leased', 'prepared', 'done')`, k).Scan(&id, &plan, &state)
		if st, ok := p.ended[id]; ok && err == nil {
			// Dry: reconcile ends it first.
			state = st
			if !holdsCopy(st) && st != ActDone {
				err = sql.ErrNoRows
			}
		}
		switch {
		case err == nil && state == ActDone && s.Op == OpDedupe:
			// Deduplicated already: its bytes are shared, nothing to do.
			done = append(done, Existing{Spec: s, ActionID: id, PlanID: plan})
			continue
		case err == nil && state == ActDone:
			// The copy is live again at the same inode and path: its
			// action is over.
			if err := p.retire(id); err != nil {
				return nil, err
			}
		case err == nil:
			return &Refused{Unit: u.key, Path: s.Copy.Path,
				Reason: fmt.Sprintf("plan %d is acting on %s already", plan, naming.EscapePath(s.Copy.Path))}, nil
		case !errors.Is(err, sql.ErrNoRows):
			return nil, classify("find an action by key", err)
		}
		n++
		if p.dry {
			continue
		}
		if err := tx.takeKeep(s.Keep.Path); err != nil {
			return nil, err
		}
		if err := tx.takeCopy(s.Copy.Path); err != nil {
			return nil, err
		}
		if _, err := tx.exec("record action", `INSERT INTO actions (plan_id, idem_key, op, hash_algo, content_hash, size,
			copy_file_id, copy_path, copy_dev, copy_ino, copy_mtime_ns,
			keep_file_id, keep_path, keep_dev, keep_ino, keep_mtime_ns, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, `+nowSQL+`, `+nowSQL+`)`,
			p.res.ID, k, s.Op, s.Algo, s.Hash, s.Size,
			s.Copy.FileID, s.Copy.Path, int64(s.Copy.Dev), int64(s.Copy.Ino), s.Copy.MtimeNS,
			s.Keep.FileID, s.Keep.Path, int64(s.Keep.Dev), int64(s.Keep.Ino), s.Keep.MtimeNS); err != nil {
			return nil, err
		}
	}
	for _, s := range u.specs {
		p.acted[s.Copy.Path] = true
	}
	p.res.Actions += n
	p.res.Done = append(p.res.Done, done...)
	return nil, nil
}

// retire ends a done action whose effect someone else undid: reverted,
// with why, its keep role given up.
func (tx *Tx) retire(id int64, why string) error {
	err := tx.moveAction(id, ActDone, ActReverted, "", "reason = ?3", why)
	if err != nil {
		return fmt.Errorf("retire action %d: %w", id, err)
	}
	return tx.notePlanReverted(id)
}
