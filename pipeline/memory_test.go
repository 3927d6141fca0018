package pipeline

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/lens"
)

// calibrate measures the peak RSS growth of converting each file in a
// fresh process and compares it with EstimateMemory, writing a table to w.
// It returns the ratios measured/estimate.
func calibrate(t testing.TB, w io.Writer, files []string, settings []Settings) []float64 {
	dir := t.TempDir()
	threads := max(1, runtime.NumCPU()/runtime.NumCPU()) // one job per CPU (threads at admission)
	var ratios []float64
	fmt.Fprintf(w, "%-38s %-6s %-5s %5s %10s %10s %6s\n", "file", "format", "alg", "MP", "estimate", "measured", "ratio")
	for _, f := range files {
		fi, err := ReadInfo(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range settings {
			est := EstimateMemory(fi, s, threads).Total
			peak := measurePeak(t, f, filepath.Join(dir, "out"+s.Format.Ext()), s, threads, est)
			r := float64(peak) / float64(est)
			ratios = append(ratios, r)
			alg := string(s.Demosaic)
			if s.HalfSize {
				alg = "half"
			}
			if len(s.Variants) > 1 {
				alg = fmt.Sprintf("%dvar", len(s.Variants))
			}
			fmt.Fprintf(w, "%-38s %-6s %-5s %5.1f %10s %10s %6.2f\n", filepath.Base(f), s.Format, alg,
				float64(fi.Width*fi.Height)/1e6, budget.FormatSize(est), budget.FormatSize(peak), r)
			// A few hundred KiB of library pages and runtime noise are
			// a large fraction of a tiny file's estimate and nothing to a
			// memory budget: within calibrationSlack counts as a match.
			lo := calibrationLow(fi, s, est)
			if (r < lo || r > 1.25) && abs64(peak-est) > calibrationSlack {
				t.Errorf("%s %s %s: measured peak %d is %.2f× the estimate %d (want %.2f..1.25, or within %d bytes)", f, s.Format, alg, peak, r, est, lo, calibrationSlack)
			}
		}
	}
	return ratios
}

// calibrationLow is the lowest measured/estimate ratio that passes for a
// conversion of fi with s estimated at est bytes: 0.8, except where the
// estimate counts the lens step's corrected copy (12 bytes a pixel of the
// decoded image) for a file whose header names no lens (and no
// --lens-model): the copy is counted since LibRaw may still find a lens
// name when it opens the file, and with RCD's lower demosaic peak (or the
// binning of a half-size decode) it is the estimate's peak, so there the
// bound is 0.8 of the estimate without the copy.
func calibrationLow(fi FileInfo, s Settings, est int64) float64 {
	if lensStage.Active(s) && fi.Header != nil && strings.TrimSpace(fi.Header.EXIF.Lens) == "" && s.LensModel == "" {
		w, h := libRawSize(fi, s)
		return 0.8 * float64(est-12*int64(w)*int64(h)) / float64(est)
	}
	if w, h := libRawSize(fi, s); streamPredicted(fi, s) && lensStreamRows(fi.Header, s, w, h) > 0 {
		// A streamed lens correction's copy of the rows it reads is
		// counted at the bound of any lens's displacement (lens.RingBytes:
		// the header does not tell the lens's own); a mild lens touches
		// fewer rows (the 12 MP synthetic lens: the lens adds 20.9 MB to
		// the measured peak, 35.5 MB to the estimate), so the bound is
		// 0.8 of the estimate without that copy.
		return 0.8 * float64(est-lens.RingBytes(w, h)) / float64(est)
	}
	return 0.8
}

// calibrationSlack is the absolute difference, in bytes, between measured
// peak and estimate that passes whatever the ratio. The measuring child's
// Go runtime alone varies by a few MiB when the machine is loaded (a
// 0.0 MP DNG measured 4.9 MB against a 2.7 MB estimate at load 12, and
// within 1 MB when idle); a 12 MiB worker is counted on top of every
// estimate anyway (WorkerRSS).
const calibrationSlack = 3 << 20

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func settingsMatrix() []Settings {
	j := DefaultSettings()
	p := DefaultSettings()
	p.Format = PNG16
	h := DefaultSettings()
	h.HalfSize = true
	d := DefaultSettings()
	d.Demosaic = "dcb"
	v := DefaultSettings()
	v.Variants = []Variant{{Name: "main", Format: "jpeg", Space: "srgb"}, {Name: "thumb", Format: "webp", Size: 512, Space: "srgb"},
		{Name: "print", Format: "tiff16", Space: "adobergb"}}
	// Six variants, two pairs sharing a rendition (given apart, so one
	// rendition must be kept across other variants unless they are
	// grouped), sharpening, four spaces.
	six := DefaultSettings()
	six.Variants = []Variant{{Name: "main", Format: "jpeg", Space: "srgb", Sharpen: 1},
		{Name: "a", Format: "png16", Space: "adobergb"}, {Name: "thumb", Format: "webp", Size: 512, Space: "srgb"},
		{Name: "b", Format: "png8", Space: "srgb", Sharpen: 1}, {Name: "c", Format: "tiff16", Space: "prophoto"},
		{Name: "d", Format: "tiff16", Space: "adobergb"}}
	return []Settings{j, p, h, d, v, six}
}

// TestEstimateCalibration: for every sample file, a 12 MP synthetic DNG
// and the same at ISO 6400 with noise (so the denoise stage runs),
// the measured peak memory of a conversion lies within 0.8–1.25× of the
// estimate, for JPEG, PNG16, half-size, three variants from one decode
// (full JPEG, 512 px WebP, full TIFF16 in Adobe RGB) and six (sharpening,
// four spaces, renditions shared by variants given apart).
func TestEstimateCalibration(t *testing.T) {
	if testing.Short() {
		t.Skip("measures conversions in child processes")
	}
	files := append(rawFiles(t), writeSynthetic(t, t.TempDir(), 4240, 2832), writeSyntheticISO(t, t.TempDir(), 4240, 2832, 6400))
	m := settingsMatrix()
	calibrate(t, os.Stdout, files, []Settings{m[0], m[1], m[2], m[4], m[5]})
}

// BenchmarkEstimateCalibration prints estimate and measured peak for
// synthetic DNGs of 12, 24, 45 and 61 MP and the sample files.
func BenchmarkEstimateCalibration(b *testing.B) {
	dir := b.TempDir()
	files := rawFiles(b)
	for _, sz := range [][2]int{{4240, 2832}, {6000, 4000}, {8256, 5504}, {9568, 6376}} {
		files = append(files, writeSynthetic(b, dir, sz[0], sz[1]))
	}
	for b.Loop() {
		calibrate(b, os.Stdout, files, settingsMatrix())
	}
}

// BenchmarkNoLeak500 converts the small sample files 500 times in this
// process and prints RSS after the first 50 and after all 500, each time
// after giving free memory back to the system (debug.FreeOSMemory for Go,
// malloc_trim for glibc's arenas), so that only memory still held shows:
// C or Go memory kept per conversion would show as growth (must be
// < 20 MB). It also prints glibc's and Go's bytes in use.
func BenchmarkNoLeak500(b *testing.B) {
	files := []string{
		filepath.Join(testdata, "raw", "canon_eos_6d.dng"),
		filepath.Join(testdata, "raw", "adobesdk_05_PGTM2_unsigned8.dng"),
		filepath.Join(testdata, "raw", "canond30_CRW.CRW"), // CFA: AHD's buffers
		filepath.Join(testdata, "raw", "adobesdk_07_PGTM2_float16.dng"),
	}
	dir := b.TempDir()
	for b.Loop() {
		var after50 int64
		for i := range 500 {
			in := files[i%len(files)]
			s := DefaultSettings()
			if i%2 == 1 {
				s.Format = PNG16
			}
			if _, err := ConvertFile(context.Background(), in, filepath.Join(dir, "out"+s.Format.Ext()), s); err != nil {
				b.Fatal(err)
			}
			if i == 49 {
				after50 = settledRSS()
				c50, _ := libraw.MallocStats()
				fmt.Printf("after 50: RSS %.1f MB, C heap in use %.2f MB, Go heap in use %.2f MB\n", float64(after50)/1e6, float64(c50)/1e6, float64(goHeapInUse())/1e6)
			}
		}
		after500 := settledRSS()
		c500, _ := libraw.MallocStats()
		fmt.Printf("after 500: RSS %.1f MB, C heap in use %.2f MB, Go heap in use %.2f MB; RSS growth %.1f MB\n",
			float64(after500)/1e6, float64(c500)/1e6, float64(goHeapInUse())/1e6, float64(after500-after50)/1e6)
		if after500-after50 > 20e6 {
			b.Errorf("RSS grew by %d bytes over 450 conversions", after500-after50)
		}
	}
}

// settledRSS returns VmRSS after returning free Go and C memory to the
// system.
func settledRSS() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	libraw.ReleaseFreeMemory()
	return procStatus("VmRSS")
}

func goHeapInUse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
