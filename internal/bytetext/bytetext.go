// Package bytetext is the one display form of a text of any bytes (a file
// name, a reason that names one): each byte that is not UTF-8 shown as
// \xNN, where json.Marshal would replace it with U+FFFD. The report, the
// JSON log and the queue's messages show names so; the exact bytes travel
// beside them where they are needed back (base64 in JSON).
package bytetext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Escape returns s with each byte that is not UTF-8 written \xNN (two
// lower-case hex digits); valid UTF-8 is returned as it is.
func Escape(s string) string {
	return ReplaceInvalid(s, func(c byte) string { return fmt.Sprintf(`\x%02x`, c) })
}

// ReplaceInvalid returns s with each byte that is not part of valid UTF-8
// replaced by repl(byte), one call per byte (strings.ToValidUTF8 would
// fold a run of them into one); valid UTF-8 is returned as it is.
func ReplaceInvalid(s string, repl func(byte) string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString(repl(s[i]))
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Clean is Escape for a terminal, a log line or a web page: also each
// control character (C0, DEL, C1: escape sequences, newlines) is written
// as a Go escape (\n, \x1b, \u0085), so a name shown stays on one line
// and cannot drive a terminal.
func Clean(s string) string {
	if !strings.ContainsFunc(s, isControl) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1: // a byte that is not UTF-8
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case isControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// isControl reports whether r is a C0 or C1 control character or DEL.
func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)
}
