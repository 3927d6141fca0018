package colour

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// The ICC profiles in icc/ are the CC0 "Compact ICC Profiles" of
// saucecontrol/Compact-ICC-Profiles (see icc/README.md). They are loaded
// with their descriptions rewritten to the spaces' full names (see
// iccDescriptions).
//
//go:embed icc/*.icc
var iccFS embed.FS

// iccByName is filled during package variable initialisation, which
// precedes every init function (the spaces in space.go need it).
var iccByName = loadICC()

func loadICC() map[string][]byte {
	m := map[string][]byte{}
	entries, err := fs.ReadDir(iccFS, "icc")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		b, err := fs.ReadFile(iccFS, "icc/"+e.Name())
		if err != nil {
			panic(err)
		}
		name := strings.TrimSuffix(e.Name(), ".icc")
		if desc, ok := iccDescriptions[name]; ok {
			if b, err = withICCDescription(b, desc); err != nil {
				panic(fmt.Sprintf("colour: embedded ICC profile %s: %v", name, err))
			}
		}
		m[name] = b
	}
	return m
}

func mustICC(name string) []byte {
	b, ok := iccByName[name]
	if !ok {
		panic("colour: missing embedded ICC profile " + name)
	}
	return b
}

// ICCProfile returns a copy of the embedded ICC profile with the given file
// name, with or without the ".icc" suffix, matched exactly first and then
// case-insensitively (e.g. "sRGB-v4", "srgb-v2-magic.icc"). Names are listed
// by ICCProfileNames.
func ICCProfile(name string) ([]byte, bool) {
	name = strings.TrimSuffix(name, ".icc")
	b, ok := iccByName[name]
	if !ok {
		for n, v := range iccByName {
			if strings.EqualFold(n, name) {
				b, ok = v, true
				break
			}
		}
	}
	if !ok {
		return nil, false
	}
	return append([]byte(nil), b...), true
}

// ICCProfileNames returns the sorted names (without ".icc") of the embedded
// profiles.
func ICCProfileNames() []string {
	names := make([]string, 0, len(iccByName))
	for n := range iccByName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
