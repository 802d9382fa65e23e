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
