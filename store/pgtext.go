package store

import (
	"database/sql/driver"
	"io"
	"strings"
	"unicode/utf8"
)

// A name on a Linux disk is any bytes but '/' and NUL; PostgreSQL's text
// holds valid UTF-8 only (a database in UTF8, as every server here is).
// So on PostgreSQL the store keeps a string as text with every byte that
// is not part of valid UTF-8 written as one code point of the last 256 of
// Unicode's plane 16 (private use: U+10FF00 + the byte), and a code point
// of that block that a name holds itself as its four bytes so written.
// Valid UTF-8 outside the block — nearly every name — is kept as it is,
// so its order, prefixes and comparisons are the same on both engines; a
// name with other bytes sorts by their code points there. A path stays
// its folder's path, '/', and its name: no byte of a valid sequence is
// '/', so the escapes of a path are those of its parts.

const (
	pgByteBase = 0x10FF00   // the code point of byte 0
	pgHigh     = "\xf4\x8f" // the UTF-8 of U+10F000..U+10FFFF starts so
)

// pgEscape is s as the store keeps it on PostgreSQL.
func pgEscape(s string) string {
	if pgPlain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || r == 0 || r >= pgByteBase {
			for _, c := range []byte(s[i : i+n]) {
				b.WriteRune(pgByteBase + rune(c))
			}
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// pgUnescape undoes pgEscape.
func pgUnescape(s string) string {
	if !strings.Contains(s, pgHigh) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r >= pgByteBase && r <= pgByteBase+0xff {
			b.WriteByte(byte(r - pgByteBase))
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// pgPlain reports whether s is kept as it is: valid UTF-8, no NUL, no
// code point of the escapes' block (whose UTF-8 starts with 0xF4 0x8F).
func pgPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 0 || c >= 0x80 {
			return utf8.ValidString(s[i:]) && !strings.Contains(s[i:], "\x00") && !strings.Contains(s[i:], pgHigh)
		}
	}
	return true
}

// pgRows unescapes the strings of the rows it passes on.
type pgRows struct{ driver.Rows }

func (r pgRows) Next(dest []driver.Value) error {
	if err := r.Rows.Next(dest); err != nil {
		if err == io.EOF { // the rows' end, as database/sql compares it
			return err
		}
		return badConn(err)
	}
	for i, v := range dest {
		if s, ok := v.(string); ok {
			dest[i] = pgUnescape(s)
		}
	}
	return nil
}

// unescaped wraps rows as pgRows.
func unescaped(rows driver.Rows, err error) (driver.Rows, error) {
	if err != nil {
		return rows, err
	}
	return pgRows{rows}, nil
}

// pgMaxFolderPath bounds a folder's path on PostgreSQL, in bytes as the
// server holds it (escaped: a byte that is no UTF-8 takes four). A B-tree
// entry holds at most 2704 bytes, and the path keys the folders' index
// (with its host) and, with a file's name of up to 1020 bytes so escaped,
// the ledger's indexes of paths: a longer one failed every write of the
// scan that met it, and the scans of the roots after it never ran.
const pgMaxFolderPath = 1400

// FolderPathFits reports whether the index can hold a folder at path (on
// SQLite any path; on PostgreSQL, pgMaxFolderPath bytes at most).
func (db *DB) FolderPathFits(path string) bool {
	if !db.dialect.postgres() || len(path) <= pgMaxFolderPath/4 {
		return true
	}
	return len(pgEscape(path)) <= pgMaxFolderPath
}

// MaxFolderPath is the longest folder path FolderPathFits takes, in bytes
// as the server holds it (0: no bound).
func (db *DB) MaxFolderPath() int {
	if !db.dialect.postgres() {
		return 0
	}
	return pgMaxFolderPath
}
