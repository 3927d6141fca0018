package pipeline

import (
	"fmt"
	"strings"
)

// wantList spells a list of accepted names written "a|b|c" (the form the
// command line's completion splits) as error messages do: "a, b or c".
func wantList(names string) string {
	n := strings.Split(names, "|")
	if len(n) == 1 {
		return n[0]
	}
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}

// parseChoice accepts s, case-insensitively, when it is one of names
// ("a|b|c"); otherwise the error is `unknown WHAT "s" (want a, b or c)`.
// It is the one parser of the settings that name one of a few values.
func parseChoice[T ~string](what, names, s string) (T, error) {
	v := strings.ToLower(s)
	for _, n := range strings.Split(names, "|") {
		if v == n {
			return T(v), nil
		}
	}
	return "", fmt.Errorf("unknown %s %q (want %s)", what, s, wantList(names))
}
