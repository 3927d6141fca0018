package pipeline

import (
	"math"
	"reflect"
	"testing"
)

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

// hashDevelop is the DevelopVersion that hashWant was computed with: the
// stage list is pinned, so that a stage change does not read as a change
// of the hash's format (TestDevelopHashDevelop covers the stages).
const hashDevelop = "open.0 preview.0 unpack.0 white-level.0 opcodes-raw.0 white-balance.0 demosaic.1 crop.0 highlights.0 opcodes.0 denoise.0 lens.0 capture-sharpen.0 exposure-anchor.1 camera-matrix.0 exposure.0 tone.0 resize.0 output-space.0 orientation.0 quantise.0 encode.1"

// hashWant are DevelopHash and the OutputHash of each output of the
// settings of hashCases, as the records of existing outputs hold them.
// They must never change: a different value makes every such output
// stale and converts it again.
var hashWant = map[string][]string{
	"anchor-none":          {"xxh3:4e8dc5af6b1126f9", "xxh3:40bfc789e5077d06"},
	"anchor-zero":          {"xxh3:e102ca4c1fdebc85", "xxh3:5177379f96550385"},
	"artist":               {"xxh3:0a98b7f5cfb98362", "xxh3:8927125c21b4349b"},
	"baseline-off":         {"xxh3:690b58322e81573b", "xxh3:f83063a8e5ac5c21"},
	"copyright":            {"xxh3:8b57ca02ed866f14", "xxh3:7c2af11b9fed63a2"},
	"crop-camera":          {"xxh3:46c3ae9476b8a091", "xxh3:f9435eed33013d92"},
	"crop-sensor":          {"xxh3:7541da651694d6bf", "xxh3:f009c972045fdce0"},
	"default":              {"xxh3:46c3ae9476b8a091", "xxh3:f9435eed33013d92"},
	"demosaic-ahd":         {"xxh3:2ee6df7c4ec9d031", "xxh3:d8d11bf60151719a"},
	"demosaic-linear":      {"xxh3:f9e19327363ae830", "xxh3:0c5aa7a5298ba076"},
	"denoise-1.5":          {"xxh3:3afbad9c10145351", "xxh3:28198abda9d4c900"},
	"denoise-off":          {"xxh3:84348b35ae856ba0", "xxh3:8c003e74e73e82d5"},
	"denoise-zero":         {"xxh3:46c3ae9476b8a091", "xxh3:f9435eed33013d92"},
	"exposure":             {"xxh3:9295658dc5e5ca0b", "xxh3:b6a166c4e88a318f"},
	"format-png16":         {"xxh3:46c3ae9476b8a091", "xxh3:c785c845c24f3db2"},
	"format-tiff16":        {"xxh3:46c3ae9476b8a091", "xxh3:e7f3e6e82207a61d"},
	"format-webp":          {"xxh3:46c3ae9476b8a091", "xxh3:f6c56e49d48a4b73"},
	"half-size":            {"xxh3:03086aa971db2c9a", "xxh3:32cdfe913c1d0d8d"},
	"highlight-1":          {"xxh3:02cbaf59e336e462", "xxh3:286df3d11fa97de1"},
	"highlights-clip":      {"xxh3:8ba40c1f660c1787", "xxh3:9687aa5feebae6da"},
	"highlights-zero":      {"xxh3:46c3ae9476b8a091", "xxh3:f9435eed33013d92"},
	"lens-db":              {"xxh3:90488f235b6af9a3", "xxh3:3e011d539beb8970"},
	"lens-db-missing":      {"xxh3:a0fead7f394a6dd2", "xxh3:c79fed800e3417bd"},
	"lens-model":           {"xxh3:74c84cfda81390fe", "xxh3:7952611c4e687446"},
	"lens-off":             {"xxh3:e873e63edd0e0c22", "xxh3:cab372def1c1a19e"},
	"lens-off-model":       {"xxh3:e873e63edd0e0c22", "xxh3:cab372def1c1a19e"},
	"lens-zero":            {"xxh3:46c3ae9476b8a091", "xxh3:f9435eed33013d92"},
	"look-camera":          {"xxh3:6b754b1bd111b5d6", "xxh3:a3747866245c0e32"},
	"look-neutral":         {"xxh3:f7d45d0ccf823b84", "xxh3:3f12f1bd4b680f16"},
	"look-zero":            {"xxh3:1e8a3e90ac5d59c7", "xxh3:f8e5cc5f3a5aa391"},
	"many":                 {"xxh3:8773f89a262dc4e8", "xxh3:28c91fde6238ab2c"},
	"opcodes-off":          {"xxh3:362cc9ea384f1192", "xxh3:0c20ba229f66a397"},
	"opcodes-zero":         {"xxh3:46c3ae9476b8a091", "xxh3:f9435eed33013d92"},
	"quality-80":           {"xxh3:46c3ae9476b8a091", "xxh3:b313a0c0421578dc"},
	"quality-95":           {"xxh3:46c3ae9476b8a091", "xxh3:139083a37cbc2f4c"},
	"sharpen-0.5":          {"xxh3:f49b4973bfa5b248", "xxh3:00765b580c0e5880"},
	"sharpen-off":          {"xxh3:298b71d7c050893c", "xxh3:6e2c3a41eee3d733"},
	"strip":                {"xxh3:b7d2b0ea70e4f744", "xxh3:7c256c5725f97c7d"},
	"subsampling-420":      {"xxh3:46c3ae9476b8a091", "xxh3:4881cd31842bd50d"},
	"subsampling-422":      {"xxh3:46c3ae9476b8a091", "xxh3:0d610e6025233d12"},
	"subsampling-444":      {"xxh3:46c3ae9476b8a091", "xxh3:f9435eed33013d92"},
	"tone-none":            {"xxh3:8bb10e563a00421f", "xxh3:7f6bf20554a0e7f9"},
	"variants-many":        {"xxh3:46c3ae9476b8a091", "xxh3:dcac53d38d64b737", "xxh3:65bbef56bb854050", "xxh3:d0f1cd21cd60ceff", "xxh3:2a94dfd79d9cf3d0", "xxh3:9f38f475c76b0670", "xxh3:24bd3cd1cbf6f50b", "xxh3:2c44e2dc5cc54963", "xxh3:26874a340e6b9a7c", "xxh3:f740364456325a84", "xxh3:99bf0a1e9ff1d31a"},
	"variants-subsampling": {"xxh3:46c3ae9476b8a091", "xxh3:f9435eed33013d92"},
	"variants-web":         {"xxh3:46c3ae9476b8a091", "xxh3:c7528e288c8a8e97", "xxh3:7f7aa588ce7a338b"},
	"wb-auto":              {"xxh3:299ddd4c4197773d", "xxh3:88b1f3a99fc746b5"},
	"wb-custom":            {"xxh3:381a3f066bd980ec", "xxh3:4e43e79f44ea4f06"},
	"wb-daylight":          {"xxh3:24549ab7fd641470", "xxh3:41d572b03bd0b495"},
	"white-level-libraw":   {"xxh3:9e084a5bcf731171", "xxh3:d1b712625dd43c91"},
	"white-level-zero":     {"xxh3:46c3ae9476b8a091", "xxh3:f9435eed33013d92"},
	"zero":                 {"xxh3:47550108146e4268", "xxh3:cc52cdc7e3d95ba3"},
}

// The hashes of the records' settings_hash are those that existing
// records hold, for many settings.
func TestDevelopHashUnchanged(t *testing.T) {
	if len(hashCases) != len(hashWant) {
		t.Fatalf("%d cases, %d expected hashes", len(hashCases), len(hashWant))
	}
	for name, change := range hashCases {
		s := DefaultSettings()
		change(&s)
		got := []string{developHash(s, hashDevelop)}
		for _, v := range s.OutputVariants() {
			got = append(got, OutputHash(got[0], v))
		}
		if want := hashWant[name]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: hashes %q, want %q", name, got, want)
		}
	}
}

// A stage added, or a stage's Version bumped, makes every output's
// records stale: DevelopHash includes DevelopVersion.
func TestDevelopHashDevelop(t *testing.T) {
	saved := Stages
	t.Cleanup(func() { Stages = saved })
	s := DefaultSettings()
	base := DevelopHash(s)

	Stages = append(append([]Stage(nil), saved...), Stage{Name: "newstage"})
	if DevelopHash(s) == base {
		t.Error("a stage added: the settings hash did not change")
	}
	bumped := append([]Stage(nil), saved...)
	bumped[0].Version++
	Stages = bumped
	if DevelopHash(s) == base {
		t.Errorf("stage %s's Version bumped: the settings hash did not change", bumped[0].Name)
	}
	Stages = saved
	if DevelopHash(s) != base {
		t.Error("the same stages: the settings hash changed")
	}
}

// hashCaseVariants parses specs (the cases are built once, by the test).
func hashCaseVariants(specs ...string) []Variant {
	var out []Variant
	for _, sp := range specs {
		v, err := ParseVariant(sp)
		if err != nil {
			panic(err)
		}
		out = append(out, v)
	}
	return out
}

// hashCases change DefaultSettings in one way each (or several: many),
// for TestDevelopHashUnchanged.
var hashCases = map[string]func(s *Settings){
	"default":            func(s *Settings) {},
	"zero":               func(s *Settings) { *s = Settings{} },
	"demosaic-ahd":       func(s *Settings) { s.Demosaic = "ahd" },
	"demosaic-linear":    func(s *Settings) { s.Demosaic = "linear" },
	"wb-auto":            func(s *Settings) { s.WhiteBalance = WhiteBalance{Mode: "auto"} },
	"wb-daylight":        func(s *Settings) { s.WhiteBalance = WhiteBalance{Mode: "daylight"} },
	"wb-custom":          func(s *Settings) { s.WhiteBalance = WhiteBalance{Mode: "custom", Multipliers: [3]float64{2, 1, 1.5}} },
	"exposure":           func(s *Settings) { s.Exposure = -1.25 },
	"baseline-off":       func(s *Settings) { s.BaselineExposure = false },
	"tone-none":          func(s *Settings) { s.Tone = ToneNone },
	"format-png16":       func(s *Settings) { s.Format = PNG16 },
	"format-tiff16":      func(s *Settings) { s.Format = "tiff16" },
	"format-webp":        func(s *Settings) { s.Format = "webp" },
	"quality-80":         func(s *Settings) { s.Quality = 80 },
	"quality-95":         func(s *Settings) { s.Quality = 95 },
	"subsampling-422":    func(s *Settings) { s.JPEGSubsampling = "422" },
	"subsampling-444":    func(s *Settings) { s.JPEGSubsampling = "444" },
	"subsampling-420":    func(s *Settings) { s.JPEGSubsampling = "420" },
	"highlight-1":        func(s *Settings) { s.Highlight = 1 },
	"white-level-libraw": func(s *Settings) { s.WhiteLevel = WhiteLevelLibRaw },
	"white-level-zero":   func(s *Settings) { s.WhiteLevel = "" },
	"highlights-clip":    func(s *Settings) { s.Highlights = HighlightsClip },
	"highlights-zero":    func(s *Settings) { s.Highlights = "" },
	"half-size":          func(s *Settings) { s.HalfSize = true },
	"crop-sensor":        func(s *Settings) { s.Crop = CropSensor },
	"crop-camera":        func(s *Settings) { s.Crop = CropCamera },
	"strip":              func(s *Settings) { s.StripMetadata = true },
	"artist":             func(s *Settings) { s.Artist = "Ann Ex" },
	"copyright":          func(s *Settings) { s.Copyright = "(c) 2026 Ann Ex" },
	"anchor-none":        func(s *Settings) { s.ExposureAnchor = AnchorNone },
	"anchor-zero":        func(s *Settings) { s.ExposureAnchor = "" },
	"look-camera":        func(s *Settings) { s.Look = LookCamera },
	"look-neutral":       func(s *Settings) { s.Look = LookNeutral },
	"look-zero":          func(s *Settings) { s.Look = "" },
	"opcodes-off":        func(s *Settings) { s.DNGOpcodes = OpcodesOff },
	"opcodes-zero":       func(s *Settings) { s.DNGOpcodes = "" },
	"denoise-off":        func(s *Settings) { s.Denoise = DenoiseOff },
	"denoise-1.5":        func(s *Settings) { s.Denoise = "1.5" },
	"denoise-zero":       func(s *Settings) { s.Denoise = "" },
	"sharpen-off":        func(s *Settings) { s.CaptureSharpen = CaptureSharpenOff },
	"sharpen-0.5":        func(s *Settings) { s.CaptureSharpen = "0.5" },
	"lens-off":           func(s *Settings) { s.Lens = LensOff },
	"lens-zero":          func(s *Settings) { s.Lens = "" },
	"lens-model":         func(s *Settings) { s.LensModel = "Canon EF 50mm f/1.8 STM" },
	"lens-off-model":     func(s *Settings) { s.Lens, s.LensModel = LensOff, "Canon EF 50mm f/1.8 STM" },
	"lens-db":            func(s *Settings) { s.LensDB = "../testdata/lensfun" },
	"lens-db-missing":    func(s *Settings) { s.LensDB = "../testdata/no-such-lensfun" },
	"many": func(s *Settings) {
		s.Demosaic, s.WhiteBalance, s.Exposure, s.HalfSize = "dcb", WhiteBalance{Mode: "auto"}, 0.5, true
		s.WhiteLevel, s.Highlights, s.Crop, s.DNGOpcodes = WhiteLevelLibRaw, HighlightsClip, CropSensor, OpcodesOff
		s.Look, s.ExposureAnchor, s.Denoise, s.CaptureSharpen, s.Lens = LookCamera, AnchorNone, "2", "off", LensOff
	},
	"variants-web": func(s *Settings) {
		s.Variants = hashCaseVariants("main=jpeg,size=2048", "thumb=webp,size=512")
	},
	"variants-many": func(s *Settings) {
		s.Variants = hashCaseVariants("a=jpeg,size=1024x768,quality=85,subsampling=422", "b=tiff16,space=prophoto,compress=deflate",
			"c=tiff8,compress=lzw,predictor=none", "d=png8,size=50%", "e=png16,size=300,upscale=true", "f=webp,quality=70,sharpen=0.5",
			"g=jpeg,space=displayp3,size=x600", "h=jpeg,subsampling=444,quality=80", "i=tiff16,space=adobergb", "j=jpeg,space=rec2020,size=250%,upscale=true")
	},
	"variants-subsampling": func(s *Settings) {
		s.JPEGSubsampling = "444"
		s.Variants = hashCaseVariants("main=jpeg")
	},
}

// settingsNotHashed are the fields of Settings (by path) that
// DevelopHash leaves out, each with why. Every other field changes the
// pictures and must change the settings hash or an output's hash: a new
// setting fails TestDevelopHashFields until it is hashed or listed here.
var settingsNotHashed = map[string]string{
	// Each variant's settings are in its output's own hash (OutputHash,
	// TestVariantSizeHash and the variant tests).
	"Variants": "hashed per output by OutputHash",
	// What a sidecar gives is per file: the runner joins it to the
	// outputs' hash (batch's taskSettings), and with "off" joins nothing.
	"Sidecar": "the sidecar's fields are hashed per file by the runner",
}

// settingsOther are the other values of fields whose values are a list
// (perturb's "jpegx" is no format: it writes the default JPEG).
var settingsOther = map[string]any{
	"Format":       Format("png16"),
	"HalfSizeTier": "auto",
	"Edit.Crop":    &EditCrop{Right: 1, Bottom: 0.5},
}

// Changing any one field of Settings changes the hash of the
// file's settings or of its single default output, unless the field is in
// settingsNotHashed: found by reflection, so that a setting added to
// Settings cannot be forgotten in DevelopHash.
func TestDevelopHashFields(t *testing.T) {
	// hash is everything of s the records of its outputs compare.
	hash := func(s Settings) string {
		h := DevelopHash(s)
		for _, v := range s.OutputVariants() {
			h += " " + OutputHash(h, v)
		}
		return h
	}
	// Bases to change one field of: some fields matter only with others
	// (the multipliers with white balance "custom", the half-size tier
	// with sized variants).
	custom := DefaultSettings()
	custom.WhiteBalance = WhiteBalance{Mode: "custom", Multipliers: [3]float64{2, 1, 1.5}}
	// The half-size tier can take a file only when every variant is
	// sized in pixels.
	sized := DefaultSettings()
	sized.Variants = variants(t, "t=jpeg,size=1024")
	bases := []Settings{DefaultSettings(), custom, sized}

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
	leaves(reflect.TypeOf(Settings{}), "", nil, func(path string, index []int) {
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
			t.Errorf("Settings.%s changes no hash: add it to DevelopHash (pipeline/develophash.go), or to settingsNotHashed with why it does not change the pictures", path)
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

// Specs that write the same file hash equal; others do not.
func TestVariantSizeHash(t *testing.T) {
	h := func(spec string) string {
		v, err := ParseVariant(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		return OutputHash("base", v)
	}
	for _, same := range [][2]string{
		{"a=jpeg,size=1024", "a=jpeg,size=1024x1024"},
		{"a=jpeg", "a=jpeg,size=100%"},
		{"a=jpeg", "a=jpeg,size=250%"},
		{"a=jpeg", "a=jpeg,upscale=true"},
		{"a=jpeg", "a=jpeg,upscale=false"},
		{"a=jpeg,size=1024", "a=jpeg,size=1024,upscale=false"},
		{"a=jpeg,size=50%", "a=jpeg,size=50.0%"},
	} {
		if h(same[0]) != h(same[1]) {
			t.Errorf("%s and %s hash differently", same[0], same[1])
		}
	}
	for _, diff := range [][2]string{
		{"a=jpeg,size=1024", "a=jpeg,size=1024x"},
		{"a=jpeg,size=1024", "a=jpeg,size=1024,upscale=true"},
		{"a=jpeg,size=1024x768", "a=jpeg,size=768x1024"},
		{"a=jpeg,size=50%", "a=jpeg,size=25%"},
		{"a=jpeg", "a=jpeg,size=250%,upscale=true"},
	} {
		if h(diff[0]) == h(diff[1]) {
			t.Errorf("%s and %s hash equal", diff[0], diff[1])
		}
	}
	// A long edge adds no hash parts, so outputs recorded with a plain
	// size= stay up to date.
	v, _ := ParseVariant("a=jpeg,size=1024")
	if len(v.hashParts()) != 0 {
		t.Errorf("long edge adds hash parts %v", v.hashParts())
	}
}

// TestEquivalentVariantsHashEqual: specs that write the same file give the
// same per-output settings hash (no needless re-convert), and specs that
// differ give different hashes.
func TestEquivalentVariantsHashEqual(t *testing.T) {
	base := DevelopHash(DefaultSettings())
	hash := func(s Settings) string {
		t.Helper()
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		vs := s.OutputVariants()
		if len(vs) != 1 {
			t.Fatalf("%d variants", len(vs))
		}
		return OutputHash(base, vs[0])
	}
	spec := func(specs ...string) Settings {
		t.Helper()
		s := DefaultSettings()
		for _, sp := range specs {
			v, err := ParseVariant(sp)
			if err != nil {
				t.Fatal(err)
			}
			s.Variants = append(s.Variants, v)
		}
		return s
	}
	png := DefaultSettings()
	png.Format = PNG16
	raw := func(v Variant) Settings { // a Variant built by hand, not parsed
		s := DefaultSettings()
		s.Variants = []Variant{v}
		return s
	}
	equal := [][]Settings{
		{DefaultSettings(), spec("main=jpeg"), spec("main=jpeg,quality=90"), spec("main=JPEG,space=sRGB"),
			spec("main=jpeg,sharpen=0"), spec("main=jpeg,sharpen=-0"), raw(Variant{Name: "main", Format: "jpeg", Space: "srgb"}),
			raw(Variant{Name: "main", Format: "jpeg", Space: "srgb", Size: -1, Sharpen: math.Copysign(0, -1)})},
		{spec("t=webp,size=512"), spec("t=webp,size=512,quality=90"), spec("t=webp,quality=90,size=512")},
		{png, spec("main=png16"), spec("main=png16,quality=50"), raw(Variant{Name: "main", Format: "png16", Quality: 90, Space: "srgb"})},
		{spec("p=tiff16"), spec("p=tiff16,quality=1")},
		{spec("p=png8"), spec("p=png8,quality=100")},
	}
	seen := map[string]int{}
	for i, group := range equal {
		want := hash(group[0])
		for _, s := range group[1:] {
			if got := hash(s); got != want {
				t.Errorf("group %d: %+v hashes differently from %+v", i, s.OutputVariants()[0], group[0].OutputVariants()[0])
			}
		}
		if other, ok := seen[want]; ok {
			t.Errorf("groups %d and %d hash equal", other, i)
		}
		seen[want] = i
	}
	// Each of these differs from main=jpeg in one setting that changes
	// the file.
	for _, sp := range []string{"main=jpeg,quality=89", "main=jpeg,size=2048", "main=jpeg,space=displayp3",
		"main=jpeg,sharpen=0.5", "main=webp", "other=jpeg"} {
		h := hash(spec(sp))
		if other, ok := seen[h]; ok {
			t.Errorf("%s hashes as group %d", sp, other)
		}
		seen[h] = -1
	}
}

// TestDevelopHashHighlights: --white-level and --highlights change the
// output, so they change the settings hash of the up-to-date records; their
// zero values hash as the defaults.
func TestDevelopHashHighlights(t *testing.T) {
	d := DefaultSettings()
	zero := d
	zero.WhiteLevel, zero.Highlights = "", ""
	if DevelopHash(d) != DevelopHash(zero) {
		t.Error("zero white level and highlight mode hash unlike the defaults")
	}
	wl := d
	wl.WhiteLevel = WhiteLevelLibRaw
	hl := d
	hl.Highlights = HighlightsClip
	if h := DevelopHash(d); h == DevelopHash(wl) || h == DevelopHash(hl) || DevelopHash(wl) == DevelopHash(hl) {
		t.Error("--white-level or --highlights does not change the settings hash")
	}
}

// TestDevelopHashLook: the exposure anchor and the look are part of the
// settings hash, so changing them converts again.
func TestDevelopHashLook(t *testing.T) {
	base := DefaultSettings()
	anchor, look := base, base
	anchor.ExposureAnchor = AnchorNone
	look.Look = LookCamera
	h := map[string]bool{DevelopHash(base): true, DevelopHash(anchor): true, DevelopHash(look): true}
	if len(h) != 3 {
		t.Errorf("hashes of default, anchor none and look camera are not all different: %v", h)
	}
}
