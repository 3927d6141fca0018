package pipeline

import (
	"context"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/rawbatch/rawbatch/internal/fault"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// librawThreadsAt converts a tiny synthetic DNG with o and the demosaic
// named, and returns the OpenMP thread cap LibRaw had (read on the
// conversion's OS thread once the file is decoded).
func librawThreadsAt(t *testing.T, o ConvertOptions, demosaic string) int {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "tiny.dng")
	if err := synthdng.WriteFile(in, synthdng.Spec{Width: 48, Height: 32, BlackLevel: 512, WhiteLevel: 16383,
		Scene: func(x, y, c int) float64 { return 0.3 }}); err != nil {
		t.Fatal(err)
	}
	got := -1
	old := fault.Hook
	fault.Hook = func(point, input string) {
		if point == fault.Decoded && input == in {
			got = libraw.MaxThreads()
		}
	}
	defer func() { fault.Hook = old }()
	s := DefaultSettings()
	s.Demosaic = Demosaic(demosaic)
	outs := []OutputSpec{{Variant: s.OutputVariants()[0], Path: filepath.Join(dir, "tiny.jpg")}}
	if _, err := ConvertOutputs(context.Background(), in, outs, s, o); err != nil {
		t.Fatal(err)
	}
	if got < 0 {
		t.Fatal("the conversion never reached the decoded fault point")
	}
	return got
}

// TestConvertOptionsThreadsReachLibRaw: ConvertOptions.Threads is the
// OpenMP thread cap of LibRaw's processing, whatever OpenMP's default
// (one more thread than CPUs, so the default cannot pass for it).
func TestConvertOptionsThreadsReachLibRaw(t *testing.T) {
	for _, n := range []int{1, runtime.NumCPU() + 1} {
		// Our own demosaic: LibRaw only unpacks, with the same cap (its
		// CR3 and compressed RAF decoders are parallel).
		if got := librawThreadsAt(t, ConvertOptions{Threads: n}, "rcd"); got != n {
			t.Errorf("Threads %d: LibRaw unpacked with %d OpenMP threads", n, got)
		}
		if got := librawThreadsAt(t, ConvertOptions{Threads: n}, "ahd"); got != n {
			t.Errorf("Threads %d: LibRaw processed with %d OpenMP threads", n, got)
		}
	}
}

// TestSettingsOnlyWhatChangesPictures: Settings carries no thread count
// (or any other field of how a conversion runs, ConvertOptions): every
// field is exported, so each is a setting of the outputs, declared and
// hashed as such.
func TestSettingsOnlyWhatChangesPictures(t *testing.T) {
	st := reflect.TypeOf(Settings{})
	for i := range st.NumField() {
		f := st.Field(i)
		if !f.IsExported() {
			t.Errorf("Settings.%s is unexported: how a conversion runs belongs in ConvertOptions, not Settings", f.Name)
		}
	}
	for i := range reflect.TypeOf(ConvertOptions{}).NumField() {
		name := reflect.TypeOf(ConvertOptions{}).Field(i).Name
		if _, ok := st.FieldByName(name); ok {
			t.Errorf("Settings has ConvertOptions' field %s", name)
		}
	}
}
