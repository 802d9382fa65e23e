package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// escapePath writes a path losslessly as valid UTF-8 the way fclones does
// (STFU-8, stfu8::encode_u8): printable ASCII and valid multi-byte UTF-8
// stay as they are, a backslash becomes \\, tab, newline and carriage return
// become \t, \n and \r, and every other control byte or byte that is not
// valid UTF-8 becomes \xNN. fclones reads such paths back with
// from_escaped_string, so its link/remove/dedupe act on the right files.
func escapePath(p string) string {
	if isPlain(p) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); {
		c := p[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(p[i:])
			if r == utf8.RuneError && n <= 1 {
				fmt.Fprintf(&b, `\x%02X`, c)
				i++
				continue
			}
			b.WriteString(p[i : i+n])
			i += n
			continue
		}
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02X`, c)
		default:
			b.WriteByte(c)
		}
		i++
	}
	return b.String()
}

// isPlain reports whether p needs no escaping (the common case).
func isPlain(p string) bool {
	ascii := true
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || utf8.ValidString(p)
}
