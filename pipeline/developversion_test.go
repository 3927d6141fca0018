package pipeline

import "testing"

// Every change of the stage list that can change outputs changes
// DevelopVersion: a stage added, removed, moved, or its Version bumped.
func TestDevelopVersion(t *testing.T) {
	base := developVersion(Stages)
	if DevelopVersion() != base {
		t.Fatalf("DevelopVersion() = %q, want developVersion(Stages) = %q", DevelopVersion(), base)
	}
	clone := func() []Stage { return append([]Stage(nil), Stages...) }
	bumped := clone()
	bumped[len(bumped)/2].Version++
	added := append(clone(), Stage{Name: "newstage"})
	removed := clone()[1:]
	swapped := clone()
	swapped[1], swapped[2] = swapped[2], swapped[1]
	seen := map[string]string{base: "the stage list"}
	for name, stages := range map[string][]Stage{"a Version bumped": bumped, "a stage added": added,
		"a stage removed": removed, "two stages swapped": swapped} {
		v := developVersion(stages)
		if other, ok := seen[v]; ok {
			t.Errorf("%s: DevelopVersion %q, the same as with %s", name, v, other)
		}
		seen[v] = name
	}
}
