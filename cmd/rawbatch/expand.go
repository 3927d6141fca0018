package main

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/spf13/viper"
)

// pathSetting reads the path setting key from v with a leading ~ expanded
// (~ and ~/x: the home directory; ~name/x: that user's), and, in a value
// from the config file or the environment (which no shell expanded),
// $VAR and ${VAR} too. An unset variable, an unknown user or a home
// directory that cannot be found is an error naming the setting and where
// it comes from: a directory literally named ~ or $HOME is never created.
// A value from a flag keeps its $ (the shell has expanded what the user
// meant to have expanded).
func pathSetting(v *viper.Viper, key string) (string, error) {
	val := v.GetString(key)
	from := sourceOf(v, key)
	fail := func(format string, a ...any) (string, error) {
		return "", fmt.Errorf("%s: %s", describe(v, key, from, val), fmt.Sprintf(format, a...))
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
