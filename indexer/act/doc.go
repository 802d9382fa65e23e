// Package act owns the actions on duplicates: dedupe (shared extents),
// link (hard or symbolic) and remove (to the freedesktop.org Trash, or for
// good), and their undo. A plan chooses, per group, the file to keep and
// records an action per copy in the ledger of package store; workers then
// claim actions under leases, check each copy and the kept file against
// the index and the disk right before acting, take every step that could
// lose bytes in two (first aside, where it can be taken back, then final),
// and end each action in the transaction that makes the index follow it.
// A run killed at any moment is healed by the next: an action found under
// way is finished or rolled back from what the disk shows, never done
// twice.
//
// The rule everything here serves is never the last copy: whatever runs —
// two plans, two processes, a crash, an undo, an edit in between — every
// content keeps at least one regular file holding its bytes at one of its
// original paths. The store keeps half of it: every live action holds the
// role keep on its kept file and copy on its copy, a path holds one role
// at a time, so it refuses an action that would cross another (see
// store/roles.go). This package keeps the other half, on disk.
//
// Plan (plan.go, planfolders.go) turns a Selection into store.ActionSpecs:
// per group of files, or per exact folder group, the file kept by the
// keep rule (KeepRules) under the first --prefer folder that holds one,
// and an action for every file of another inode; files in a Trash are
// neither kept nor acted on. It only decides: the caller records the plan
// (store.CreatePlan), which the store accepts or refuses unit by unit.
//
// A Runner works one plan, its own, in batches (runner.go, batch.go):
// store.ClaimActions leases up to batchSize actions in one write and a
// heartbeat renews every lease of the batch (and the plan's) every third
// of LeaseTTL; a lost lease cancels the batch. For each action:
//
//   - check (check.go) opens both files through their folders, reached
//     through no symlink (fsops.go), checks them against the index
//     (device, inode, size, mtime), takes a kernel read lease on both so
//     no writer can open them unseen, and compares their bytes (but for
//     dedupe, where the kernel compares);
//   - store.Tx.ArmAction, the fenced write, renews the lease and makes the
//     action prepared with what undo needs of the copy; an action whose
//     renewal took more than half the lease is given back instead;
//   - both files are checked again, then the effect (effects.go) runs:
//     FIDEDUPERANGE in place, or the copy renamed aside (exchanged with
//     its link, moved to the Trash, or to the action's temporary name),
//     the kept file checked once more on its held descriptor and by name,
//     and only then the step made final, or taken back;
//   - the batch's folders are synced and one write ends every action and
//     makes the index follow (a link, a file gone).
//
// Two actions that would cross cannot both pass the last check: each
// moves its copy aside before it checks its kept file. A lost lease, a
// full disk or a failing index stops the run and leaves what is at hand
// as it stands. Reconcile (runs.go, reconcile.go) finds what dead runs
// left: actions not begun are abandoned, and a prepared one is taken over
// (store.TakeOver) and settled from the disk — effect complete and kept
// file intact: done; otherwise taken back. A run is gone when its process
// is known dead or its lease expired, but a prepared action waits for its
// worker staleGrace past its lease (a frozen process may still act); a
// live run's actions are never touched. Every temporary name derives from
// the action's key and id, so the next run knows whose leftover it finds.
// Every run reconciles all plans before it plans; an undo, its own plan.
//
// Undo (undo.go, undolink.go) reverts the done actions of a plan, latest
// first, each under a lease: a trashed copy goes back to its path (never
// over a file that took it since), a linked copy becomes a file of its own
// again, with its recorded owner, mode, xattrs, inode flags and times,
// written to a temporary name, recorded, then exchanged with the link; a
// deduplicated copy needs nothing. A copy deleted for good cannot come
// back, and the report says so.
//
// The Trash (trash.go) follows the freedesktop.org specification: the
// home Trash when it lies on the copy's file system, else the topdir's
// .Trash/$uid or .Trash-$uid, never across file systems and never a can
// another user could write to; root's remove of another user's copy goes
// to that user's Trash.
//
// The files, by concern:
//
//	plan.go         Selection, keep rules, Plan over groups of files
//	planfolders.go  Plan over exact folder groups
//	runner.go       Config, Runner, Run, the heartbeat, outcomes
//	batch.go        a batch: each action checked, armed, acted; one end
//	check.go        finding, holding, comparing and rechecking both files
//	effects.go      dedupe, link, trash, unlink, each in two steps
//	fsops.go        folders opened through no symlink, byte compare,
//	                xattrs, inode flags, kernel read leases
//	trash.go        the freedesktop.org Trash
//	reconcile.go    settling one prepared action from the disk
//	runs.go         Reconcile: which runs are dead and what they left
//	undo.go         Undo, restoring from the Trash
//	undolink.go     undoing a link: the copy's own file again
package act
