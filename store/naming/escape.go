package naming

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// EscapePath writes a path losslessly as valid UTF-8 the way fclones does
// (STFU-8, stfu8::encode_u8): printable ASCII and valid multi-byte UTF-8
// stay as they are, a backslash becomes \\, tab, newline and carriage return
// become \t, \n and \r, and every other control byte or byte that is not
// valid UTF-8 becomes \xNN. fclones reads such paths back with
// from_escaped_string, so its link/remove/dedupe act on the right files.
func EscapePath(p string) string {
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

// UnescapePath reads a path EscapePath wrote (fclones' from_escaped_string):
// \\, \t, \n, \r and \xNN.
func UnescapePath(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("path %q ends in a lone backslash", s)
		}
		i++
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'x':
			if i+3 > len(s) {
				return "", fmt.Errorf("path %q: short \\x escape", s)
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", fmt.Errorf("path %q: bad \\x escape", s)
			}
			b.WriteByte(byte(v))
			i += 2
		default:
			return "", fmt.Errorf("path %q: unknown escape \\%c", s, s[i])
		}
	}
	return b.String(), nil
}
