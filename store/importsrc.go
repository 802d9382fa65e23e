package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dupefs/dupefs/store/naming"
)

// An index moves to PostgreSQL by an import: the SQLite index it leaves
// (the source) is read, never written — not even migrated: one of an
// older dupefs is refused, with the command that upgrades it — and what
// it knows is taken over by the importing host: its roots, the hashes of
// its files (a file is hashed again only where the disk no longer holds
// it as the source recorded it, see Source.FolderHashes) and its ledger
// (importledger.go).

// Source is a SQLite index opened to be imported into another index.
type Source struct {
	db *DB
	id string
}

// OpenSource opens the SQLite index at path read-only as an import's
// source. A path that is not there fails with ErrNoIndex; a file that is
// no dupefs index with ErrCorrupt; an index of an older dupefs with
// ErrOldSchema (it is not upgraded here: that would write it), of a newer
// one with ErrNewerSchema.
func OpenSource(ctx context.Context, path string) (*Source, error) {
	if IsPostgresURL(path) {
		return nil, fmt.Errorf("%w: an import reads an index file (SQLite), not a PostgreSQL database", ErrCantOpen)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCantOpen, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w at %s: no such file", ErrNoIndex, naming.EscapePath(abs))
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrCantOpen, err)
	case fi.IsDir():
		return nil, fmt.Errorf("%w: %s is a directory", ErrCantOpen, naming.EscapePath(abs))
	}
	if abs, err = privatePlace(abs, true); err != nil {
		return nil, err
	}
	if err := checkHeader(abs, fi.Size()); err != nil {
		return nil, err
	}
	// Each read is a folder's rows, looked up by the folder's path: small
	// page caches do (four of 4 MB each put 30 MB on the peak of an
	// import of /usr, for no time measured).
	db, err := openReadOnly(ctx, abs, Options{ReadConns: 2, ReadCacheKiB: 1000, BusyTimeout: 10 * time.Second, NoHost: true})
	if old := (*oldSchema)(nil); errors.As(err, &old) {
		return nil, fmt.Errorf("%w: it was written by an older dupefs (its schema is at version %d, this dupefs's at %d), and "+
			"an import never writes it: upgrade it once with `dupefs --db %s root ls`, then import it", ErrOldSchema, old.have, old.want,
			naming.EscapePath(abs))
	}
	if err != nil {
		return nil, err
	}
	s := &Source{db: db}
	if s.id, err = s.identity(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// identity names the source whatever its path: the moment its schema was
// made, and the machine that last wrote it. A copy of the file is the
// same index.
func (s *Source) identity(ctx context.Context) (string, error) {
	var made int64
	var machine string
	err := s.db.queryRow(ctx, `SELECT (SELECT applied_at FROM schema_migrations WHERE version = 1),
		(SELECT machine_id FROM hosts WHERE id = 1)`).Scan(&made, &machine)
	if err != nil {
		return "", classify("read the index's identity", err)
	}
	sum := sha256.Sum256([]byte(strconv.FormatInt(made, 10) + "\x00" + machine))
	return hex.EncodeToString(sum[:8]), nil
}

// Host is the host the source belongs to: the name and machine id of the
// last process that opened it for writing ("" for one never so opened).
func (s *Source) Host(ctx context.Context) (Host, error) {
	var h Host
	err := s.db.queryRow(ctx, "SELECT id, name, machine_id FROM hosts WHERE id = 1").Scan(&h.ID, &h.Name, &h.MachineID)
	return h, classify("read the index's host", err)
}

// Close closes the source.
func (s *Source) Close() error { return s.db.Close() }

// Path is the source's file.
func (s *Source) Path() string { return s.db.path }

// HashAlgo is the algorithm the source's hashes are made with.
func (s *Source) HashAlgo() string { return s.db.hashAlgo }

// Roots lists the source's roots, by path.
func (s *Source) Roots(ctx context.Context) ([]Root, error) {
	return s.db.Files().AllRoots(ctx)
}

// RunUnderWay finds a plan of the source whose run may be acting still:
// one of its actions, or the plan itself, is under a lease that has not
// expired, of a worker dead does not know to be dead (a run of dedupe,
// link or remove holds its plan and the actions at hand; an undo holds the
// plan and the done action it reverts). (A run that died leaves its plan
// to the next run's reconcile, in whichever index holds it then.)
func (s *Source) RunUnderWay(ctx context.Context, dead func(worker string) bool) (p ActionPlan, live bool, err error) {
	err = s.db.read(ctx, func(tx *Tx) error {
		p, live, err = s.runUnderWay(ctx, tx.tx, dead)
		return err
	})
	return p, live, err
}

// runUnderWay is RunUnderWay in the read q.
func (s *Source) runUnderWay(ctx context.Context, q *sql.Tx, dead func(worker string) bool) (ActionPlan, bool, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, op, state, worker_id FROM plans
		WHERE worker_id IS NOT NULL AND lease_expires_at > `+nowSQL+`
		UNION ALL
		SELECT p.id, p.op, p.state, a.worker_id FROM actions a JOIN plans p ON p.id = a.plan_id
		WHERE a.worker_id IS NOT NULL AND a.lease_expires_at > `+nowSQL+` ORDER BY 1`)
	plans, err := collect("find runs under way", rows, err, func(r rowScanner) (p ActionPlan, err error) {
		err = r.Scan(&p.ID, &p.Op, &p.State, &p.Worker)
		return p, err
	})
	if err != nil {
		return ActionPlan{}, false, err
	}
	for _, p := range plans {
		if !dead(p.Worker) {
			return p, true, nil
		}
	}
	return ActionPlan{}, false, nil
}

// RunUnderWayError is an import's ledger copy refused: a run acts on the
// source (RunUnderWay) as its ledger is read.
type RunUnderWayError struct{ Plan ActionPlan }

func (e *RunUnderWayError) Error() string {
	return e.Plan.RunName() + " is acting on the index"
}

// RunName names the run a plan's lease says is at work on it: its own run
// while it is open, an undo of it once it is done.
func (p ActionPlan) RunName() string {
	if p.State != "" && p.State != "open" {
		return fmt.Sprintf("dupefs undo %d", p.ID)
	}
	return fmt.Sprintf("a run of dupefs %s (its plan %d)", p.Op, p.ID)
}

// PriorFile is a file as the source recorded it: its inode (Stamp) and
// what was read of it.
type PriorFile struct {
	Stamp Stamp
	Hash  FileHash
}

// FolderHashes gives, by name, the files of folder dir the source holds
// live with a hash (the content's, or a large file's prefix hash). A
// caller takes one for a file only while the disk holds the file with its
// Stamp.
func (s *Source) FolderHashes(ctx context.Context, dir string) (map[string]PriorFile, error) {
	rows, err := s.db.query(ctx, `SELECT f.name, f.size, f.mtime_ns, f.dev, f.ino, f.hash_status, f.prefix_hash, f.content_hash
		FROM folders d JOIN files f ON f.folder_id = d.id
		WHERE d.path = ? AND f.missing = 0 AND (f.hash_status = 'done' OR f.hash_status = 'partial')`, dir)
	if err != nil {
		return nil, classify("read the imported index's hashes", err)
	}
	defer rows.Close()
	out := map[string]PriorFile{}
	for rows.Next() {
		var name string
		var p PriorFile
		var dev, ino int64
		if err := rows.Scan(&name, &p.Stamp.Size, &p.Stamp.MtimeNS, &dev, &ino, &p.Hash.Status, &p.Hash.Prefix, &p.Hash.Content); err != nil {
			return nil, classify("read the imported index's hashes", err)
		}
		p.Stamp.Dev, p.Stamp.Ino = uint64(dev), uint64(ino)
		switch {
		case p.Hash.Status == HashDone && checkSum(s.db.hashAlgo, p.Hash.Content) == nil:
		case p.Hash.Status == HashPartial && p.Hash.Prefix.Valid:
			p.Hash.Content = nil
		default:
			continue // nothing usable: the file is read
		}
		out[name] = p
	}
	return out, classify("read the imported index's hashes", rows.Err())
}

// priorRow is a file row of the source, for a file the ledger names that
// the importing scan did not find (a copy moved to the Trash, say).
type priorRow struct {
	size, mtimeNS, dev, ino, nlink int64
	status                         string
	prefix                         sql.NullInt64
	content                        []byte
	missingSince                   sql.NullInt64
}

// row reads the source's row of the file at path in the read q; false
// when it has none.
func (s *Source) row(ctx context.Context, q *sql.Tx, path string) (priorRow, bool, error) {
	var r priorRow
	dir, name := filepath.Split(path)
	err := q.QueryRowContext(ctx, `SELECT f.size, f.mtime_ns, f.dev, f.ino, f.nlink, f.hash_status, f.prefix_hash, f.content_hash,
		f.missing_since FROM folders d JOIN files f ON f.folder_id = d.id WHERE d.path = ? AND f.name = ?`,
		filepath.Clean(dir), name).Scan(&r.size, &r.mtimeNS, &r.dev, &r.ino, &r.nlink, &r.status, &r.prefix, &r.content, &r.missingSince)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	return r, err == nil, classify("read a file of the imported index", err)
}
