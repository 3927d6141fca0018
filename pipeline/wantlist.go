package pipeline

import "strings"

// wantList spells a list of accepted names written "a|b|c" (the form the
// command line's completion splits) as error messages do: "a, b or c".
func wantList(names string) string {
	n := strings.Split(names, "|")
	if len(n) == 1 {
		return n[0]
	}
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}
