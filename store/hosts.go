package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A host is who a process works as: a name (Options.Host.Name, the
// machine's host name by default) and the machine id that tells two
// machines of one name apart. Roots, scan and hash jobs and plans of
// actions belong to a host; a process claims only its own host's jobs and
// acts only on its own host's files. An SQLite index has one host, the
// local one (row 1): whoever opens it for writing names it. A PostgreSQL
// index holds many; a name registered by another machine is refused
// (ErrHostClash) until the host is renamed or forgotten.

// Host is a host as a process works as it.
type Host struct {
	ID        int64 // its row; 0 when it is not registered (a reader on a new host)
	Name      string
	MachineID string
}

// ErrHostClash: the host name is registered by another machine.
var ErrHostClash = errors.New("host name taken by another machine")

// ErrMachineHasHost: the machine is registered under another host name.
var ErrMachineHasHost = errors.New("this machine is registered under another host name")

// ErrHostHasRoots: a host to forget still has roots.
var ErrHostHasRoots = errors.New("host still has roots")

// ErrHostAlive: a host to forget works now (it holds a lease).
var ErrHostAlive = errors.New("host is working now")

// machineIDFiles are where a machine's id is read, in order.
var machineIDFiles = []string{"/etc/machine-id", "/var/lib/dbus/machine-id"}

// ReadMachineID reads this machine's id (/etc/machine-id, or D-Bus's copy
// of it); "" when there is none.
func ReadMachineID() string {
	for _, p := range machineIDFiles {
		if b, err := os.ReadFile(p); err == nil {
			if s := strings.TrimSpace(string(b)); s != "" {
				return s
			}
		}
	}
	return ""
}

// MaxHostName is the longest host name, in bytes: a machine's (Linux's
// HOST_NAME_MAX). A view puts it before the names of that host's copies,
// which must stay within 255 bytes.
const MaxHostName = 64

// CheckHostName refuses a name no report could print as HOST:/path, nor
// a view put in a name or under /net: empty, longer than MaxHostName,
// holding ':', '/', white space or a control character (which a terminal
// acts on), invalid UTF-8, or "." and "..".
func CheckHostName(name string) error {
	switch {
	case name == "":
		return errors.New("host name must not be empty")
	case len(name) > MaxHostName:
		return fmt.Errorf("host name %.20q…: longer than %d bytes", name, MaxHostName)
	case !utf8.ValidString(name):
		return fmt.Errorf("host name %q: not UTF-8", name)
	case strings.ContainsFunc(name, func(r rune) bool { return r == ':' || r == '/' || unicode.IsSpace(r) || unicode.IsControl(r) }):
		return fmt.Errorf("host name %q: must not hold ':', '/', white space or control characters", name)
	case name == "." || name == "..":
		return fmt.Errorf("host name %q: not a folder's name", name)
	}
	return nil
}

// hostDefaults fills in the name and machine id of h left empty.
func hostDefaults(h Host) Host {
	if h.Name == "" {
		h.Name, _ = os.Hostname()
	}
	if h.MachineID == "" {
		h.MachineID = ReadMachineID()
	}
	return h
}

// Host is the host this process works as.
func (db *DB) Host() Host { return db.host }

// registerHost records h as the host of this process: in SQLite the one
// host takes h's name and machine id (written only when they differ); in PostgreSQL h's row is found by
// name, or the placeholder an older index left is taken over, or a row
// is added. A name another machine registered is refused, and so is a
// second name for a machine (machineTaken).
func (db *DB) registerHost(ctx context.Context, h Host, none bool) error {
	if none {
		return nil
	}
	h = hostDefaults(h)
	if err := CheckHostName(h.Name); err != nil {
		return err
	}
	if db.dialect.postgres() && h.MachineID == "" {
		return fmt.Errorf("register host %s: no machine id in %s: a shared index tells machines apart by it",
			h.Name, strings.Join(machineIDFiles, " or "))
	}
	if !db.dialect.postgres() {
		h.ID = 1
		var name, machine string
		err := db.w.QueryRowContext(ctx, "SELECT name, machine_id FROM hosts WHERE id = 1").Scan(&name, &machine)
		if err != nil {
			return classify("read host", err)
		}
		db.host = h
		if name == h.Name && machine == h.MachineID {
			return nil
		}
		return db.Write(ctx, func(tx *Tx) error {
			_, err := tx.exec("name the host", `UPDATE hosts SET name = ?1, machine_id = ?2, last_seen_at = `+nowSQL+`
				WHERE id = 1`, h.Name, h.MachineID)
			return err
		})
	}
	err := db.Write(ctx, func(tx *Tx) error {
		var machine string
		err := tx.queryRowP("SELECT id, machine_id FROM hosts WHERE name = ?", h.Name).Scan(&h.ID, &machine)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if err := machineTaken(tx.queryRowP, h); err != nil {
				return err
			}
			err = tx.queryRowP(`UPDATE hosts SET name = ?1, machine_id = ?2, last_seen_at = `+nowSQL+`
				WHERE name = '' RETURNING id`, h.Name, h.MachineID).Scan(&h.ID)
			if errors.Is(err, sql.ErrNoRows) {
				err = tx.queryRowP(`INSERT INTO hosts (name, machine_id, created_at, last_seen_at)
					VALUES (?1, ?2, `+nowSQL+`, `+nowSQL+`) RETURNING id`, h.Name, h.MachineID).Scan(&h.ID)
			}
			return classify("register host", err)
		case err != nil:
			return classify("find host", err)
		case machine != h.MachineID:
			return hostClash(h, machine)
		}
		_, err = tx.exec("record host seen", "UPDATE hosts SET last_seen_at = "+nowSQL+" WHERE id = ?", h.ID)
		return err
	})
	if err != nil {
		return err
	}
	db.host = h
	return nil
}

// lookupHost finds h's row for a reader, which registers nothing: a host
// not registered yet has no roots (ID 0). A name another machine
// registered, or a second name for a machine, is refused as for a writer.
func (db *DB) lookupHost(ctx context.Context, h Host, none bool) error {
	if none {
		return nil
	}
	h = hostDefaults(h)
	if err := CheckHostName(h.Name); err != nil {
		return err
	}
	if !db.dialect.postgres() {
		h.ID = 1
		db.host = h
		return nil
	}
	var machine string
	err := db.queryRow(ctx, "SELECT id, machine_id FROM hosts WHERE name = ?", h.Name).Scan(&h.ID, &machine)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		h.ID = 0
		if err := machineTaken(func(q string, args ...any) rowScanner { return db.queryRow(ctx, q, args...) }, h); err != nil {
			return err
		}
	case err != nil:
		return classify("find host", err)
	case machine != h.MachineID:
		return hostClash(h, machine)
	}
	db.host = h
	return nil
}

// hostNames maps every host's row to its name, but this process's host's
// to "".
func (db *DB) hostNames(ctx context.Context) (map[int64]string, error) {
	rows, err := db.query(ctx, "SELECT id, name FROM hosts WHERE id <> ?", db.host.ID)
	out := map[int64]string{}
	_, err = collect("read host names", rows, err, func(r rowScanner) (struct{}, error) {
		var id int64
		var name string
		err := r.Scan(&id, &name)
		out[id] = name
		return struct{}{}, err
	})
	return out, err
}

// machineTaken refuses h, a name not registered, when h's machine is
// registered under another name: one machine is one host. Its device and
// inode numbers mean one file under both names, and its paths one folder,
// so its files would be copies of each other on two hosts (a check would
// call one a copy of the other, and a report count it twice). A machine
// whose host name changed renames its host instead.
func machineTaken(q func(string, ...any) rowScanner, h Host) error {
	var other string
	err := q("SELECT name FROM hosts WHERE machine_id = ? AND name <> '' ORDER BY id LIMIT 1", h.MachineID).Scan(&other)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return classify("find the machine's host", err)
	}
	return fmt.Errorf("%w: machine %s is host %s: run with --host %s, "+
		"or rename that host if this machine's name changed (dupefs host rename %s %s); "+
		"a machine cloned from another shares its id until given its own (systemd-machine-id-setup)",
		ErrMachineHasHost, h.MachineID, other, other, other, h.Name)
}

func hostClash(h Host, machine string) error {
	return fmt.Errorf("%w: host %s is registered by machine %s, and this is machine %s: "+
		"run with another --host, or rename the other one (dupefs host rename %s NEW) or forget it (dupefs host forget %s)",
		ErrHostClash, h.Name, machine, h.MachineID, h.Name, h.Name)
}

// hostRoots is the set of the roots of the host whose id is bound to p, for
// "root_id IN ...".
func hostRoots(p string) string {
	return "(SELECT id FROM roots WHERE host_id = " + p + ")"
}

// hostPlans is the set of the plans of the host whose id is bound to p, for
// "plan_id IN ...".
func hostPlans(p string) string {
	return "(SELECT id FROM plans WHERE host_id = " + p + ")"
}

// owed is true of a row f of files hashed in part whose prefix another
// inode shares: its whole hash is its host's to make. Another host's hash
// run may have found the prefix shared (its own file came later), and it
// reads only its own files.
const owed = `f.hash_status = 'partial' AND f.missing = 0
	  AND EXISTS (SELECT 1 FROM files g WHERE g.size = f.size AND g.prefix_hash = f.prefix_hash AND g.missing = 0
	              AND (g.dev <> f.dev OR g.ino <> f.ino OR g.root_id <> f.root_id))`

// partialOwed selects the sizes of the files owed of the host bound to ?1.
const partialOwed = `SELECT DISTINCT f.size FROM files f
	WHERE f.root_id IN (SELECT id FROM roots WHERE host_id = ?1) AND ` + owed

// copyHost is the SQL expression for the host of file alias's copy as the
// view names it: "" when it lies on this process's host, else the host's
// name. An SQLite index has one host, the local one.
func (db *DB) copyHost(alias string) string {
	if !db.dialect.postgres() {
		return "''"
	}
	return `coalesce((SELECT h.name FROM roots r JOIN hosts h ON h.id = r.host_id
		WHERE r.id = ` + alias + `.root_id AND r.host_id <> ` + strconv.FormatInt(db.host.ID, 10) + `), '')`
}

// localCopy is an SQL condition (with its leading AND) that content alias
// has a live copy on this process's host, or "" in an SQLite index (one
// host). A thumbnail is made from, and kept beside, a host's own copies:
// the view of a host that holds none of a group has none of it.
func (db *DB) localCopy(alias string) string {
	if !db.dialect.postgres() {
		return ""
	}
	return ` AND EXISTS (SELECT 1 FROM files lf WHERE lf.content_hash = ` + alias + `.content_hash
		AND lf.missing = 0 AND lf.root_id IN ` + hostRoots(strconv.FormatInt(db.host.ID, 10)) + `)`
}
