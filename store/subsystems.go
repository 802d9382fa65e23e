package store

import "context"

// Files is the subsystem of roots, folders and file rows.
type Files struct{ db *DB }

// View is what the mounted view reads. It never writes.
type View struct{ db *DB }

// Folders is the subsystem of folder signatures and folder groups.
type Folders struct{ db *DB }

// Ledger holds plans and actions (see roles.go for the rule it keeps).
type Ledger struct{ db *DB }

// Thumbs is the thumbnail queue.
type Thumbs struct{ db *DB }

// Jobs is the queue of scan and hash jobs.
type Jobs struct{ db *DB }

// Maint is the subsystem of WAL checkpoints and of the purge of rows
// missing past their grace.
type Maint struct{ db *DB }

// Files returns the subsystem of roots, folders and file rows.
func (db *DB) Files() *Files { return &Files{db} }

// View returns what the mounted view reads.
func (db *DB) View() *View { return &View{db} }

// Folders returns the folder signature subsystem.
func (db *DB) Folders() *Folders { return &Folders{db} }

// Ledger returns the ledger of plans and actions.
func (db *DB) Ledger() *Ledger { return &Ledger{db} }

// Thumbs returns the thumbnail queue.
func (db *DB) Thumbs() *Thumbs { return &Thumbs{db} }

// Jobs returns the queue of scan and hash jobs.
func (db *DB) Jobs() *Jobs { return &Jobs{db} }

// Maint returns the maintenance subsystem (checkpoints, purge).
func (db *DB) Maint() *Maint { return &Maint{db} }

// HashAlgo is the index's hash algorithm (the view names groups with it).
func (vw *View) HashAlgo() string { return vw.db.hashAlgo }

// HashAlgo is the index's hash algorithm.
func (fl *Files) HashAlgo() string { return fl.db.hashAlgo }

// HashAlgo is the index's hash algorithm (folder groups are named with it).
func (fo *Folders) HashAlgo() string { return fo.db.hashAlgo }

// SubtreeContents is View.SubtreeContents, for the folder report.
func (fo *Folders) SubtreeContents(ctx context.Context, dir string) ([]SubtreeFile, bool, error) {
	return fo.db.View().SubtreeContents(ctx, dir)
}

// SubtreeContentsOn is View.SubtreeContentsOn, for the folder report.
func (fo *Folders) SubtreeContentsOn(ctx context.Context, host int64, dir string) ([]SubtreeFile, bool, error) {
	return fo.db.View().SubtreeContentsOn(ctx, host, dir)
}

// Host is the host this process works as (the maintainer names its
// workers by it).
func (mt *Maint) Host() Host { return mt.db.host }
