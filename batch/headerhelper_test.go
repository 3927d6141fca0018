package batch

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline"

	"github.com/rawbatch/rawbatch/internal/faulttest"
	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/header"
)

// TestHeaderReaderHang: with the fault hook making LibRaw's header open of
// one file never return, that file fails with "reading its header timed
// out after 2 s: damaged file?" (corrupt), the process that hung is a
// helper, not this one, and it has been killed and reaped when the error
// is returned (kill(pid, 0) finds no such process: a zombie would still be
// found); the other files read normally, before and after.
func TestHeaderReaderHang(t *testing.T) {
	dir := t.TempDir()
	src := mustRead(t, filepath.Join(testdata, "raw", "adobesdk_05_PGTM2_unsigned8.dng"))
	for _, name := range []string{"ok1.dng", "hung.dng", "ok2.dng"} {
		touch(t, filepath.Join(dir, name), src)
	}
	pids := filepath.Join(dir, "pids")
	t.Setenv(FaultEnv, "hangheader=hung.dng")
	t.Setenv(faulttest.PIDFileEnv, pids)
	hr := &HeaderReader{Exe: os.Args[0]}
	defer hr.Close()
	if _, err := hr.ReadInfo(filepath.Join(dir, "ok1.dng")); err != nil {
		t.Fatalf("ok1.dng: %v", err)
	}
	_, err := hr.ReadInfo(filepath.Join(dir, "hung.dng"))
	if !errors.Is(err, rawerr.ErrCorrupt) || !errors.Is(err, header.ErrHeaderTimeout) ||
		!strings.Contains(err.Error(), "hung.dng: corrupt or truncated data: reading its header timed out after 2 s: damaged file?") {
		t.Errorf("hung.dng: %v", err)
	}
	b, rerr := os.ReadFile(pids)
	if rerr != nil {
		t.Fatalf("the hook did not run: %v", rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == os.Getpid() {
		t.Fatalf("LibRaw's header open hung in the parent process")
	}
	if k := hr.killedHelpers(); len(k) != 1 || k[0] != pid {
		t.Errorf("killed helpers %v, want [%d]", k, pid)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the hung helper %d is still there (kill 0: %v)", pid, err)
	}
	fi, err := hr.ReadInfo(filepath.Join(dir, "ok2.dng"))
	if err != nil || fi.Width <= 0 {
		t.Errorf("ok2.dng after the hang: %+v %v", fi, err)
	}
}

// TestHeaderReaderMatchesInProcess: the helper's reads give the same
// header as in process, errors included, for every sample file.
func TestHeaderReaderMatchesInProcess(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testdata, "raw", "*"))
	hr := &HeaderReader{Exe: os.Args[0]}
	defer hr.Close()
	n := 0
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || !st.Mode().IsRegular() || strings.HasSuffix(f, ".md") {
			continue
		}
		want, werr := pipeline.ReadHeader(f)
		got, gerr := hr.ReadHeader(f)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) || rawerr.Kind(werr) != rawerr.Kind(gerr) {
			t.Errorf("%s: error %v, in process %v", f, gerr, werr)
			continue
		}
		if want != nil && got != nil && (want.Width != got.Width || want.Height != got.Height || want.Make != got.Make || want.Model != got.Model || want.CFA != got.CFA) {
			t.Errorf("%s: %+v, in process %+v", f, *got, *want)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no sample files")
	}
}

// BenchmarkHeaderReader1000 reads the headers of 1000 files (links to the
// sample DNGs, CR2s, ...) one after the other, with LibRaw's open in process
// (ReadHeader) and in a header helper (HeaderReader), and reports
// milliseconds per file.
func BenchmarkHeaderReader1000(b *testing.B) {
	src, _ := filepath.Glob(filepath.Join(testdata, "raw", "*.*"))
	var files []string
	dir := b.TempDir()
	for i := 0; len(src) > 0 && len(files) < 1000; i++ {
		s := src[i%len(src)]
		if strings.HasSuffix(s, ".md") {
			continue
		}
		p := filepath.Join(dir, strconv.Itoa(i)+"_"+filepath.Base(s))
		if err := os.Link(s, p); err != nil {
			b.Fatal(err)
		}
		files = append(files, p)
	}
	for _, c := range []struct {
		name string
		hr   *HeaderReader
	}{{"in-process", nil}, {"helper", &HeaderReader{Exe: os.Args[0]}}} {
		b.Run(c.name, func(b *testing.B) {
			defer c.hr.Close()
			for i := 0; i < b.N; i++ {
				for _, f := range files {
					c.hr.ReadHeader(f)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N*len(files)), "ms/file")
		})
	}
}
