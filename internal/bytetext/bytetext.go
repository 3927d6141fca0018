// Package bytetext is the one display form of a text of any bytes (a file
// name, a reason that names one): each byte that is not UTF-8 shown as
// \xNN, where json.Marshal would replace it with U+FFFD. The report, the
// JSON log and the queue's messages show names so; the exact bytes travel
// beside them where they are needed back (base64 in JSON).
package bytetext

import (
	"fmt"
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
