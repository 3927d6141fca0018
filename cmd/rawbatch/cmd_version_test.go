package main

import (
	"runtime/debug"
	"testing"
)

// TestVersionFrom: the version comes from the build info: the module
// version, else the VCS revision (marked when the tree was modified).
func TestVersionFrom(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "4e2e2261f0c2a9d6b7e8f9a0b1c2d3e4f5a6b7c8"}}
	for _, c := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{nil, "dev"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: rev}, "v1.4.0"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev}, "dev-4e2e2261f0c2"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"})}, "dev-4e2e2261f0c2-dirty"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
	} {
		if got := versionFrom(c.bi); got != c.want {
			t.Errorf("versionFrom(%+v) = %q, want %q", c.bi, got, c.want)
		}
	}
	if Version() != Version() {
		t.Error("Version changes within one binary")
	}
}
