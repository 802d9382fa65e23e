package act

import (
	"context"
	"time"

	"github.com/dupefs/dupefs/store"
)

// Index is everything a Runner uses of the index: the ledger of plans and
// actions, its one write path, and the folder signatures it brings up to
// date after a run. IndexOf makes one from an open index.
type Index struct {
	Ledger
	Writer
	Sigs
}

// Ledger claims and reads the actions of a plan (*store.Ledger has it).
type Ledger interface {
	ClaimActions(ctx context.Context, plan int64, owner string, ttl time.Duration, n int) ([]store.Action, error)
	ClaimUndo(ctx context.Context, planID int64, skip []int64, owner string, ttl time.Duration) (store.Action, error)
	CountActions(ctx context.Context, planID int64, state, op string) (int64, error)
	Plans(ctx context.Context, id int64, limit int) ([]store.ActionPlan, error)
	ReconcileCandidates(ctx context.Context, plan int64) ([]store.OpenAction, error)
	ReleaseDeadUndo(ctx context.Context, plan int64, dead func(worker string) bool) (int, error)
	HoldPlan(ctx context.Context, plan int64, owner string, ttl time.Duration, force bool, dead func(worker string) bool) (bool, error)
	LetPlanGo(ctx context.Context, plan int64, owner string) error
	TakeOver(ctx context.Context, a store.Action, owner string, ttl time.Duration) (store.Action, error)
}

// Writer is the index's one write path (*store.DB has it): the ledger's
// state changes are written inside it, fenced by the action's lease.
type Writer interface {
	Write(ctx context.Context, fn func(*store.Tx) error) error
}

// Sigs brings folder signatures up to date (*store.Folders has it).
type Sigs interface {
	UpdateFolderSigs(ctx context.Context) (int, error)
}

// IndexOf is the Index of an open index.
func IndexOf(db *store.DB) Index { return Index{db.Ledger(), db, db.Folders()} }

// Groups is what Plan reads of the index: the groups of duplicate files
// and folders it makes actions of (IndexOf's db.Files() and db.View()
// together, see GroupsOf).
type Groups struct {
	Files
	View
}

// Files reads groups and files by path (*store.Files has it).
type Files interface {
	Report(ctx context.Context, q store.GroupQuery, stats func(store.GroupStats) error, each func(store.Group, []store.GroupFile) error) error
	FileByPath(ctx context.Context, path string) (store.IndexedFile, error)
	HashAlgo() string
}

// View reads groups by hash and folder groups (*store.View has it).
type View interface {
	Group(ctx context.Context, algo string, sum []byte) (store.GroupInfo, error)
	FolderGroupBySig(ctx context.Context, sig []byte) (store.FolderGroupInfo, error)
	FolderMembersPage(ctx context.Context, groupID, afterID int64, limit int) ([]store.FolderMember, error)
	SubtreeContents(ctx context.Context, dir string) (files []store.SubtreeFile, known bool, err error)
}

// GroupsOf is the Groups of an open index.
func GroupsOf(db *store.DB) Groups { return Groups{db.Files(), db.View()} }
