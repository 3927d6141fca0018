package batch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/pipeline"

	_ "github.com/rawbatch/rawbatch/internal/faulttest" // the fault hooks
)

// TestWorkerCrashAndHang: with the test-only fault hook, the decode of one
// file crashes with SIGSEGV in C code, another hangs and a third's worker
// is killed from outside (SIGKILL); the batch finishes, those fail with
// "decoder crashed (signal 11 ...)", "timed out" and "killed by signal 9
// ..., which rawbatch did not send", leave no output or temporary file, and the others convert.
func TestWorkerCrashAndHang(t *testing.T) {
	in := t.TempDir()
	out := t.TempDir()
	for _, name := range []string{"ok1.dng", "crash.dng", "hang.dng", "killed.dng", "ok2.dng"} {
		touch(t, filepath.Join(in, name), mustRead(t, filepath.Join(testdata, "raw", "adobesdk_05_PGTM2_unsigned8.dng")))
	}
	t.Setenv(FaultEnv, "crash=crash.dng,hang=hang.dng,killed=killed.dng")
	p, err := PlanBatch([]string{in}, out, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	p.Inspect(pipeline.DefaultSettings(), 1, 2)
	r := &Runner{Settings: pipeline.DefaultSettings(), Jobs: 2, Exe: os.Args[0], Timeout: 3 * time.Second}
	got := map[string]FileResult{}
	for _, fr := range r.Run(context.Background(), p) {
		got[filepath.Base(fr.Input)] = fr
	}
	if fr := got["crash.dng"]; !errors.Is(fr.Err, ErrCrashed) || !strings.Contains(fr.Err.Error(), "signal 11") {
		t.Errorf("crash.dng: %v", fr.Err)
	}
	if fr := got["killed.dng"]; !errors.Is(fr.Err, ErrCrashed) || !strings.Contains(fr.Err.Error(), "killed by signal 9 (killed), which rawbatch did not send") {
		t.Errorf("killed.dng: %v", fr.Err)
	}
	if fr := got["hang.dng"]; !errors.Is(fr.Err, ErrTimeout) || !strings.Contains(fr.Err.Error(), "timed out after 3 s") {
		t.Errorf("hang.dng: %v", fr.Err)
	}
	for _, name := range []string{"ok1.dng", "ok2.dng"} {
		if fr := got[name]; fr.Status != StatusConverted || fr.PeakBytes <= 0 {
			t.Errorf("%s: %v %v (peak %d)", name, fr.Status, fr.Err, fr.PeakBytes)
		}
	}
	ents, _ := os.ReadDir(out)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "ok1.jpg ok2.jpg" {
		t.Errorf("output directory holds %v, want only ok1.jpg ok2.jpg", names)
	}
}

func TestSecondsText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		62996352 * time.Microsecond: "63", 3 * time.Second: "3", 2500 * time.Millisecond: "2.5", 1234 * time.Millisecond: "1.2",
	} {
		if got := secondsText(d); got != want {
			t.Errorf("secondsText(%v) = %q, want %q", d, got, want)
		}
	}
}
