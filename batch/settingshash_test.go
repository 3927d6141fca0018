package batch

import (
	"reflect"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline"
)

// A stage added, or a stage's Version bumped, makes every output's
// records stale: the settings hash includes pipeline.DevelopVersion.
func TestSettingsHashDevelop(t *testing.T) {
	saved := pipeline.Stages
	t.Cleanup(func() { pipeline.Stages = saved })
	s := pipeline.DefaultSettings()
	base := SettingsHash(s)

	pipeline.Stages = append(append([]pipeline.Stage(nil), saved...), pipeline.Stage{Name: "newstage"})
	if SettingsHash(s) == base {
		t.Error("a stage added: the settings hash did not change")
	}
	bumped := append([]pipeline.Stage(nil), saved...)
	bumped[0].Version++
	pipeline.Stages = bumped
	if SettingsHash(s) == base {
		t.Errorf("stage %s's Version bumped: the settings hash did not change", bumped[0].Name)
	}
	pipeline.Stages = saved
	if SettingsHash(s) != base {
		t.Error("the same stages: the settings hash changed")
	}
}

// settingsNotHashed are the fields of pipeline.Settings (by path) that
// SettingsHash leaves out, each with why. Every other field changes the
// pictures and must change the settings hash or an output's hash: a new
// setting fails TestSettingsHashFields until it is hashed or listed here.
var settingsNotHashed = map[string]string{
	// Each variant's settings are in its output's own hash (outputHash,
	// TestVariantSizeHash and the variant tests).
	"Variants": "hashed per output by outputHash",
}

// settingsOther are the other values of fields whose values are a list
// (perturb's "jpegx" is no format: it writes the default JPEG).
var settingsOther = map[string]any{
	"Format": pipeline.Format("png16"),
}

// Changing any one field of pipeline.Settings changes the hash of the
// file's settings or of its single default output, unless the field is in
// settingsNotHashed: found by reflection, so that a setting added to
// Settings cannot be forgotten in SettingsHash.
func TestSettingsHashFields(t *testing.T) {
	// hash is everything of s the records of its outputs compare.
	hash := func(s pipeline.Settings) string {
		h := SettingsHash(s)
		for _, v := range s.OutputVariants() {
			h += " " + outputHash(h, v)
		}
		return h
	}
	// Bases to change one field of: some fields matter only with others
	// (the multipliers with white balance "custom").
	custom := pipeline.DefaultSettings()
	custom.WhiteBalance = pipeline.WhiteBalance{Mode: "custom", Multipliers: [3]float64{2, 1, 1.5}}
	bases := []pipeline.Settings{pipeline.DefaultSettings(), custom}

	// leaves calls f with the path of every field under typ that is not
	// a struct (a struct's fields are changed one by one).
	var leaves func(typ reflect.Type, path string, index []int, f func(path string, index []int))
	leaves = func(typ reflect.Type, path string, index []int, f func(string, []int)) {
		for i := 0; i < typ.NumField(); i++ {
			fld := typ.Field(i)
			p, idx := fld.Name, append(append([]int(nil), index...), i)
			if path != "" {
				p = path + "." + fld.Name
			}
			if _, ok := settingsNotHashed[p]; ok {
				continue
			}
			if fld.Type.Kind() == reflect.Struct {
				leaves(fld.Type, p, idx, f)
				continue
			}
			f(p, idx)
		}
	}
	n := 0
	leaves(reflect.TypeOf(pipeline.Settings{}), "", nil, func(path string, index []int) {
		n++
		changed := false
		for _, b := range bases {
			s := b
			fv := reflect.ValueOf(&s).Elem().FieldByIndex(index)
			if !fv.CanSet() {
				t.Errorf("Settings.%s: unexported and not in settingsNotHashed; hash it or list it with why", path)
				return
			}
			if alt, ok := settingsOther[path]; ok {
				fv.Set(reflect.ValueOf(alt))
			} else if !perturb(fv) {
				t.Errorf("Settings.%s: %s, a kind this test cannot change; extend perturb", path, fv.Kind())
				return
			}
			if hash(s) != hash(b) {
				changed = true
			}
		}
		if !changed {
			t.Errorf("Settings.%s changes no hash: add it to SettingsHash (batch/batch.go), or to settingsNotHashed with why it does not change the pictures", path)
		}
	})
	if n < 10 {
		t.Fatalf("only %d fields found", n)
	}
}

// perturb changes v to another value of its type, and says whether it
// could.
func perturb(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 0.5)
	case reflect.Array:
		return v.Len() > 0 && perturb(v.Index(0))
	default:
		return false
	}
	return true
}
