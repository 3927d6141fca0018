package main

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
)

// pathSetting reads the path setting v, expanded by expandPath.
func pathSetting(v value) (string, error) {
	val, from := v.String(), v.From()
	return expandPath(val, from, describe(v.st, v.name, from, val))
}

// expandPath expands the path val of a setting from source from, named
// what in messages ("--output $HOME/x (command line)"): a leading ~ (~ and
// ~/x: the home directory; ~name/x: that user's), from any source, and, in
// a value from the config file or the environment (which no shell
// expanded), $VAR and ${VAR} too. An unset variable, an unknown user or a
// home directory that cannot be found is an error naming the setting and
// where it comes from; so is a $VAR or ${VAR} left in the path: one in a
// flag's value that no shell expanded (quoted, or a CI job or an exec-style
// runner that runs no shell), or one that a variable's value brought. A
// directory literally named ~ or $HOME is never created.
func expandPath(val string, from source, what string) (string, error) {
	fail := func(format string, a ...any) (string, error) {
		return "", fmt.Errorf("%s: %s", what, fmt.Sprintf(format, a...))
	}
	out := val
	if from == fromFile || from == fromEnv {
		var missing []string
		out = os.Expand(val, func(name string) string {
			s, ok := os.LookupEnv(name)
			if !ok || s == "" {
				missing = append(missing, "$"+name)
			}
			return s
		})
		if len(missing) > 0 {
			return fail("%s is not set (or empty); set it, or write the path out", strings.Join(missing, ", "))
		}
	}
	if m := shellVar.FindString(out); m != "" {
		if from == fromFile || from == fromEnv {
			return fail("%s is left after expanding the variables (a variable's value holds it); write the path out", m)
		}
		return fail("%s was not expanded by a shell; give the path itself", m)
	}
	if !strings.HasPrefix(out, "~") {
		return out, nil
	}
	name, rest, _ := strings.Cut(out[1:], string(filepath.Separator))
	var home string
	if name == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return fail("~ is the home directory, which is unknown: %v; write the path out", err)
		}
		home = h
	} else {
		u, err := user.Lookup(name)
		if err != nil {
			return fail("~%s: no such user; write the path out", name)
		}
		home = u.HomeDir
	}
	return filepath.Join(home, rest), nil
}

// shellVar matches a shell variable reference: $NAME or ${NAME}.
var shellVar = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})`)
