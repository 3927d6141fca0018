package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rawbatch/rawbatch/batch"
)

// checkEnvNames warns of each RAWBATCH_* environment variable that
// is no setting of cmd (decls; RAWBATCH_QUALTY), naming the nearest one when it
// is a likely typo (at most 2 edits, and fewer than half the name): such a variable is otherwise silently ignored.
// Empty variables (ignored as settings are) and those of the tests
// (RAWBATCH_TEST_*) are left alone.
func checkEnvNames(cmd *cobra.Command, decls []setting) []string {
	known := map[string]bool{"RAWBATCH_CONFIG": true, batch.FaultEnv: true}
	for _, k := range append(settingKeys(decls), queueCommandKeys()...) { // the multi-host commands' too
		known[envName(k)] = true
	}
	var names []string
	for n := range known {
		names = append(names, n)
	}
	sort.Strings(names)
	var unknown []string
	for _, kv := range os.Environ() {
		name, val, _ := strings.Cut(kv, "=")
		if val != "" && strings.HasPrefix(name, "RAWBATCH_") && !known[name] && !strings.HasPrefix(name, "RAWBATCH_TEST_") {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	var warns []string
	for _, name := range unknown {
		// A likely typo: at most 2 edits away, and fewer than half the
		// name after RAWBATCH_ (RAWBATCH_XYZ is not a typo of RAWBATCH_WB).
		if best := nearest(name, names, "RAWBATCH_"); best != "" {
			warns = append(warns, fmt.Sprintf("%s is not a rawbatch setting and is ignored; did you mean %s?", name, best))
		} else {
			warns = append(warns, fmt.Sprintf("%s is not a rawbatch setting and is ignored; the variables are RAWBATCH_ and a flag name of '%s', see --help", name, cmd.CommandPath()))
		}
	}
	return warns
}

// nearest returns the name of names that name is likely a typo of: at
// most 2 edits away and fewer than half the name after prefix (RAWBATCH_XYZ
// is not a typo of RAWBATCH_WB), the closest; "" when there is none.
func nearest(name string, names []string, prefix string) string {
	short := strings.TrimPrefix(name, prefix)
	best, bestD := "", min(3, (len(short)+1)/2)
	for _, k := range names {
		if d := editDistance(short, strings.TrimPrefix(k, prefix)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// sourceError is a settings error with where the setting came from.
type sourceError struct {
	err  error
	from string
}

func (e *sourceError) Error() string { return e.err.Error() + "; set by " + e.from }
func (e *sourceError) Unwrap() error { return e.err }

// withSource appends where a setting's value came from to err when err
// names the setting as a flag only ("--quality: high is not a whole
// number"): "...; set by RAWBATCH_QUALITY=high in the environment", or
// "...; set by quality: in the config file FILE". Errors about a value
// given on the command line, or that name their source already, are
// returned as they are.
func withSource(v value, err error) error {
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, "--"+v.name)
	if !ok || rest != "" && rest[0] != ':' && rest[0] != ' ' ||
		strings.Contains(msg, "(environment)") || strings.Contains(msg, "(config file") {
		return err
	}
	var se *sourceError
	if errors.As(err, &se) {
		return err
	}
	switch v.From() {
	case fromEnv:
		return &sourceError{err, envName(v.name) + "=" + os.Getenv(envName(v.name)) + " in the environment"}
	case fromFile:
		return &sourceError{err, v.name + ": in the config file " + v.st.ConfigFileUsed()}
	}
	return err
}

// bareBytes refuses a --mem-budget that is negative, zero, or a bare
// number below 1 MiB: a bare number is bytes, and "4" is surely 4GiB
// without its unit, not a budget no conversion fits in. It suggests the
// number with a unit only when that makes a plausible budget (1 MiB to
// maxHintBudget): "1048575" gets no "1048575GiB".
func bareBytes(s string) error {
	t := strings.TrimSpace(s)
	const want = "give a size such as 4GiB or 3500MB, or a percentage such as 50%"
	if strings.HasPrefix(t, "-") {
		return fmt.Errorf("%s is negative; %s", s, want)
	}
	num := strings.TrimRightFunc(strings.TrimSuffix(t, "%"), func(r rune) bool { return r > '9' || r < '0' && r != '.' })
	if f, err := strconv.ParseFloat(strings.TrimSpace(num), 64); err == nil && f == 0 && num != "" {
		return fmt.Errorf("%s is zero, a budget no conversion fits in; %s, or leave it out for the default (50%% of the available memory)", s, want)
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f >= 1<<20 {
		return nil
	}
	var units []string
	for _, u := range []struct {
		name string
		mul  float64
	}{{"GiB", 1 << 30}, {"MB", 1e6}} {
		if b := f * u.mul; b >= 1<<20 && b <= maxHintBudget {
			units = append(units, t+u.name)
		}
	}
	if len(units) == 0 {
		return fmt.Errorf("%s is a bare number, so %s bytes, less than 1 MiB; %s", s, t, want)
	}
	return fmt.Errorf("%s is a bare number, so %s bytes, less than 1 MiB; give a unit: %s, or a percentage such as 50%%", s, t, strings.Join(units, ", "))
}

// maxHintBudget is the largest budget bareBytes suggests: more is no
// plausible meaning of a bare number.
const maxHintBudget = 512 << 30
