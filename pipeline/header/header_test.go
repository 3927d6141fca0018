package header

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/internal/testtool"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
	"github.com/rawbatch/rawbatch/pipeline/tifftag"
	"github.com/rwcarlsen/goexif/exif"
	"github.com/rwcarlsen/goexif/mknote"
)

const testdata = "../../testdata"

// corpus returns the sample files: testdata/raw and testdata/stubs, plus
// testdata/unsupported when withUnsupported.
func corpus(t testing.TB, withUnsupported bool) []string {
	t.Helper()
	dirs := []string{"raw", "stubs"}
	if withUnsupported {
		dirs = append(dirs, "unsupported")
	}
	var files []string
	for _, d := range dirs {
		m, err := filepath.Glob(filepath.Join(testdata, d, "*"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("only %d sample files found under %s", len(files), testdata)
	}
	return files
}

// identified is what raw-identify -v says about a file.
type identified struct {
	camera           string
	fullW, fullH     int
	outputW, outputH int
}

var (
	reOutput = regexp.MustCompile(`(?m)^Output size:\s*(\d+)\s*x\s*(\d+)`)
	reFull   = regexp.MustCompile(`(?m)^Full size:\s*(\d+)\s*x\s*(\d+)`)
	reCamera = regexp.MustCompile(`(?m)^Camera:\s*(.*?)\s+ID:`)
)

var riCache sync.Map

// rawIdentify runs LibRaw's raw-identify -v; ok is false when it does not
// identify the file (no "Output size:" line).
func rawIdentify(t testing.TB, path string) (identified, bool) {
	t.Helper()
	if v, ok := riCache.Load(path); ok {
		r := v.(identified)
		return r, r.outputW > 0
	}
	bin := testtool.Need(t, "raw-identify")
	out, _ := exec.Command(bin, "-v", path).CombinedOutput()
	var r identified
	atoi := func(s []byte) int { n, _ := strconv.Atoi(string(s)); return n }
	if m := reOutput.FindSubmatch(out); m != nil {
		r.outputW, r.outputH = atoi(m[1]), atoi(m[2])
	}
	if m := reFull.FindSubmatch(out); m != nil {
		r.fullW, r.fullH = atoi(m[1]), atoi(m[2])
	}
	if m := reCamera.FindSubmatch(out); m != nil {
		r.camera = string(m[1])
	}
	riCache.Store(path, r)
	return r, r.outputW > 0
}

// sentinel reports whether err wraps one of rawerr's sentinels.
func sentinel(err error) bool {
	for _, s := range []error{rawerr.ErrEmpty, rawerr.ErrNotRaw, rawerr.ErrUnsupported, rawerr.ErrCorrupt} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// looseMatch reports whether some word (3+ letters) of name occurs in
// camera, ignoring case: "NIKON CORPORATION" matches "Nikon D70",
// "Konica Minolta Camera, Inc." matches "Minolta DiMAGE A2".
func looseMatch(name, camera string) bool {
	camera = strings.ToLower(camera)
	for _, w := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == ' ' || r == ',' || r == '-' }) {
		if len(w) >= 3 && strings.Contains(camera, w) {
			return true
		}
	}
	return false
}

// Formats of the sample files, from the magic bytes and Make.
var wantFormat = map[string]string{
	"RAW_KODAK_C330_FORMAT_NONE_YRGB.raw": "KODAK-RAW",
	"adobesdk_05_PGTM2_unsigned8.dng":     "DNG",
	"adobesdk_07_PGTM2_float16.dng":       "DNG",
	"canon550d_colorchart.dng":            "DNG",
	"canon_eos_6d.dng":                    "DNG",
	"canond30_CRW.CRW":                    "CRW",
	"exiftool_CanonRaw.cr2":               "CR2",
	"exiftool_CanonRaw.cr3":               "CR3",
	"exiftool_CanonRaw.crw":               "CRW",
	"exiftool_DNG.dng":                    "DNG",
	"exiftool_FujiFilm.raf":               "RAF",
	"exiftool_Minolta.mrw":                "MRW",
	"exiftool_Nikon.nef":                  "NEF",
	"exiftool_Panasonic.rw2":              "RW2",
	"exiftool_PhaseOne.iiq":               "IIQ",
	"exiftool_SigmaDP2.x3f":               "X3F",
	"exiv2-canon-powershot-s40.crw":       "CRW",
	"exiv2_Canon-R6-pruned.CR3":           "CR3",
	"exiv2_IMG_1361_iphone12pro.dng":      "DNG",
	"filetype_fixture-Leica-M10.dng":      "DNG",
	"filetype_fixture-sony-zv-e10.arw":    "ARW",
	"filetype_fixture.cr3":                "CR3",
	"nomexif_canon-r6.cr3":                "CR3",
	"adobesdk_14_hdr_sdr_profiles.dng":    "DNG",
}

// TestMatchesRawIdentify is the acceptance test: for every sample that
// raw-identify identifies, Width×Height is its "Output size", Make/Model
// match its "Camera:" line, and where our own parser found the raw size of
// a TIFF-based or CR3 (or CRW/MRW/RAF) file it is raw-identify's "Full
// size". Files in testdata/raw must read without error; stubs may fail only
// with ErrCorrupt (they are truncated or stripped: the header is still
// filled).
func TestMatchesRawIdentify(t *testing.T) {
	n := 0
	for _, f := range corpus(t, true) {
		base := filepath.Base(f)
		h, err := Read(f)
		if h == nil {
			t.Fatalf("%s: nil header", base)
		}
		if want := wantFormat[base]; want == "" {
			t.Errorf("%s: no expected format listed", base)
		} else if h.Format != want {
			t.Errorf("%s: Format %q, want %q", base, h.Format, want)
		}
		if err != nil && !sentinel(err) {
			t.Errorf("%s: error %v wraps no rawerr sentinel", base, err)
		}
		if err != nil && !strings.Contains(err.Error(), f) {
			t.Errorf("%s: error %q does not name the path", base, err)
		}
		ri, ok := rawIdentify(t, f)
		if !ok {
			if h.SizeFromLibRaw {
				t.Errorf("%s: raw-identify does not identify it but Read says LibRaw did", base)
			}
			continue
		}
		n++
		dir := filepath.Base(filepath.Dir(f))
		if dir == "raw" && err != nil {
			t.Errorf("%s: Read: %v", base, err)
		}
		if err != nil && !errors.Is(err, rawerr.ErrCorrupt) {
			t.Errorf("%s: Read: %v (only ErrCorrupt is expected for a stub)", base, err)
		}
		if h.Width != ri.outputW || h.Height != ri.outputH {
			t.Errorf("%s: Width×Height %d×%d, raw-identify Output size %d×%d", base, h.Width, h.Height, ri.outputW, ri.outputH)
		}
		if !h.SizeFromLibRaw {
			t.Errorf("%s: LibRaw identifies it but Read did not use LibRaw's size", base)
		}
		if !looseMatch(h.Make, ri.camera) || !strings.Contains(strings.ToLower(ri.camera), strings.ToLower(h.Model)) || h.Model == "" {
			t.Errorf("%s: Make/Model %q/%q vs raw-identify Camera %q", base, h.Make, h.Model, ri.camera)
		}
		// EXIF.Make is empty for a file without Make (the Adobe SDK DNGs:
		// UniqueCameraModel "Test Camera" alone, their EXIF.Model), not
		// LibRaw's made-up "Test".
		if !looseMatch(h.EXIF.Make+" "+h.EXIF.Model, ri.camera) {
			t.Errorf("%s: EXIF.Make/Model %q/%q vs raw-identify Camera %q", base, h.EXIF.Make, h.EXIF.Model, ri.camera)
		}
		if h.RawWidth != ri.fullW || h.RawHeight != ri.fullH {
			t.Errorf("%s: RawWidth×RawHeight %d×%d, raw-identify Full size %d×%d", base, h.RawWidth, h.RawHeight, ri.fullW, ri.fullH)
		}
		// The header-only parse must find the same raw size where it finds
		// one (no legitimate difference on these samples: Phase One IIQ
		// and the headerless Kodak are left to LibRaw).
		own, _ := readFile(f, false, nil)
		switch {
		case own.RawWidth == 0:
			if h.Format != "IIQ" && h.Format != "KODAK-RAW" {
				t.Errorf("%s: the header parser found no raw size", base)
			}
		case own.RawWidth != ri.fullW || own.RawHeight != ri.fullH:
			t.Errorf("%s: header raw size %d×%d, raw-identify Full size %d×%d", base, own.RawWidth, own.RawHeight, ri.fullW, ri.fullH)
		}
		// For DNG the header-only Width/Height (ActiveArea, Orientation)
		// must already be LibRaw's: this pins the rule used when LibRaw
		// cannot open a DNG.
		if h.Format == "DNG" && (own.Width != ri.outputW || own.Height != ri.outputH) {
			t.Errorf("%s: header-only DNG size %d×%d, LibRaw output %d×%d", base, own.Width, own.Height, ri.outputW, ri.outputH)
		}
	}
	if n < 15 {
		t.Errorf("only %d files identified by raw-identify", n)
	}
}

// TestRawFilesClean: the decodable samples read without error or warning,
// within the read budget, with EXIF where the file has it.
func TestRawFilesClean(t *testing.T) {
	for _, f := range corpus(t, false) {
		h, err := Read(f)
		base := filepath.Base(f)
		if h.BytesRead <= 0 || h.BytesRead > MaxRead {
			t.Errorf("%s: BytesRead %d outside 1..%d", base, h.BytesRead, MaxRead)
		}
		if filepath.Base(filepath.Dir(f)) != "raw" {
			continue
		}
		if err != nil || len(h.Warnings) > 0 || h.Unsupported != "" {
			t.Errorf("%s: err %v, warnings %q, unsupported %q", base, err, h.Warnings, h.Unsupported)
		}
		if h.Orientation < 1 || h.Orientation > 8 {
			t.Errorf("%s: Orientation %d", base, h.Orientation)
		}
	}
	h, err := Read(filepath.Join(testdata, "raw", "canon_eos_6d.dng"))
	if err != nil {
		t.Fatal(err)
	}
	e := h.EXIF
	if e.Make != "Canon" || e.Model != "Canon EOS 6D" || e.ISO != 1000 || e.FNumber != 5.6 || e.FocalLength != 65 ||
		e.Lens != "EF24-105mm f/4L IS USM" || e.DateTime.Format("2006:01:02 15:04:05") != "2019:06:06 07:29:51" ||
		e.ExposureTime < 0.0166 || e.ExposureTime > 0.0167 {
		t.Errorf("canon_eos_6d.dng EXIF %+v", e)
	}
	if h.Compression != 34892 || h.BitsPerSample != 8 || h.SamplesPerPixel != 3 {
		t.Errorf("canon_eos_6d.dng: Compression %d, BitsPerSample %d, SamplesPerPixel %d; want lossy DNG 34892, 8, 3", h.Compression, h.BitsPerSample, h.SamplesPerPixel)
	}
	h, _ = Read(filepath.Join(testdata, "raw", "canon550d_colorchart.dng"))
	if h.ActiveArea != [4]int{26, 152, 1182, 1886} || h.DefaultCrop != [4]int{0, 0, 1734, 1156} || h.BitsPerSample != 14 || h.Compression != 1 {
		t.Errorf("canon550d_colorchart.dng: ActiveArea %v, DefaultCrop %v, bps %d, compression %d", h.ActiveArea, h.DefaultCrop, h.BitsPerSample, h.Compression)
	}
}

// TestSyntheticDNGSubIFD: with a preview in IFD0 and the raw in a SubIFD,
// the raw size is the SubIFD's; DefaultCrop is reported but, as in LibRaw
// 0.20, not applied; the output is rotated by the Orientation.
func TestSyntheticDNGSubIFD(t *testing.T) {
	path := filepath.Join(t.TempDir(), "synth.dng")
	err := synthdng.WriteFile(path, synthdng.Spec{
		Width: 640, Height: 480, ThumbnailIFD0: true,
		DefaultCropOrigin: [2]int{8, 6}, DefaultCropSize: [2]int{600, 440},
		Orientation: 6,
		Scene:       func(x, y, c int) float64 { return 0.2 },
		Timestamp:   time.Date(2024, 5, 6, 7, 8, 9, 0, time.Local), ISO: 400, ExposureTime: 1.0 / 250, FNumber: 4, FocalLength: 35,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, withLibRaw := range []bool{true, false} {
		h, err := readFile(path, withLibRaw, nil)
		if err != nil {
			t.Fatalf("libraw=%v: %v", withLibRaw, err)
		}
		if h.Format != "DNG" || h.RawWidth != 640 || h.RawHeight != 480 {
			t.Errorf("libraw=%v: %s raw %d×%d, want DNG 640×480 (the SubIFD, not IFD0's 256×192 preview)", withLibRaw, h.Format, h.RawWidth, h.RawHeight)
		}
		if h.Width != 480 || h.Height != 640 || h.Orientation != 6 {
			t.Errorf("libraw=%v: output %d×%d orientation %d, want 480×640 (uncropped, rotated) and 6", withLibRaw, h.Width, h.Height, h.Orientation)
		}
		if h.DefaultCrop != [4]int{8, 6, 600, 440} {
			t.Errorf("libraw=%v: DefaultCrop %v", withLibRaw, h.DefaultCrop)
		}
		if h.BitsPerSample != 16 || h.SamplesPerPixel != 1 || h.Compression != 1 {
			t.Errorf("libraw=%v: bps %d spp %d compression %d", withLibRaw, h.BitsPerSample, h.SamplesPerPixel, h.Compression)
		}
		e := h.EXIF
		if e.ISO != 400 || e.FNumber != 4 || e.FocalLength != 35 || e.ExposureTime != 0.004 || e.Make != synthdng.DefaultMake ||
			e.DateTime.Format(time.DateTime) != "2024-05-06 07:08:09" {
			t.Errorf("libraw=%v: EXIF %+v", withLibRaw, e)
		}
	}
	ri, ok := rawIdentify(t, path)
	if !ok || ri.outputW != 480 || ri.outputH != 640 || ri.fullW != 640 {
		t.Errorf("raw-identify: %+v", ri)
	}
}

// TestCR3: variant (C-RAW vs RAW), crx version, CMT1 make/model/orientation.
func TestCR3(t *testing.T) {
	cases := []struct {
		file, model, variant string
		version, orientation int
		rawW, rawH           int
	}{
		{"exiv2_Canon-R6-pruned.CR3", "Canon EOS R6", "CRAW", 0x200, 1, 3584, 2386},
		{"exiftool_CanonRaw.cr3", "Canon EOS M50", "RAW", 0x100, 1, 6288, 4056},
		{"nomexif_canon-r6.cr3", "Canon EOS R6", "RAW", 0x100, 1, 5568, 3708},
		{"filetype_fixture.cr3", "Canon EOS R", "RAW", 0x100, 6, 6888, 4546},
	}
	for _, c := range cases {
		h, err := Read(filepath.Join(testdata, "stubs", c.file))
		if err != nil && !errors.Is(err, rawerr.ErrCorrupt) {
			t.Errorf("%s: %v", c.file, err)
		}
		if h.Format != "CR3" || h.Variant != c.variant || h.CRX == nil || h.CRX.Version != c.version {
			t.Errorf("%s: format %q variant %q crx %+v; want CR3 %s version %#x", c.file, h.Format, h.Variant, h.CRX, c.variant, c.version)
			continue
		}
		if h.EXIF.Make != "Canon" || h.EXIF.Model != c.model || h.Orientation != c.orientation {
			t.Errorf("%s: EXIF %q %q orientation %d; want Canon %q %d", c.file, h.EXIF.Make, h.EXIF.Model, h.Orientation, c.model, c.orientation)
		}
		if h.RawWidth != c.rawW || h.RawHeight != c.rawH || h.BitsPerSample != 14 || h.CRX.Planes != 4 {
			t.Errorf("%s: raw %d×%d bits %d planes %d", c.file, h.RawWidth, h.RawHeight, h.BitsPerSample, h.CRX.Planes)
		}
		if (c.version == 0x200 && libraw.VersionNumber() < libraw021) != (h.Unsupported != "") {
			t.Errorf("%s: Unsupported %q", c.file, h.Unsupported)
		}
		if h.EXIF.DateTime.IsZero() || h.EXIF.ISO == 0 || h.EXIF.FNumber == 0 || h.EXIF.Lens == "" {
			t.Errorf("%s: EXIF from CMT2/CMT3 missing: %+v", c.file, h.EXIF)
		}
	}
	// filetype_fixture.cr3 (EOS R) is in portrait: the header-only size
	// is the Canon SensorInfo image area rotated (LibRaw 0.21, which
	// identifies it, gives its own size: see TestMatchesRawIdentify).
	h, _ := readFile(filepath.Join(testdata, "stubs", "filetype_fixture.cr3"), false, nil)
	if h.Width != 4480 || h.Height != 6720 {
		t.Errorf("filetype_fixture.cr3: %d×%d, want 4480×6720", h.Width, h.Height)
	}
}

// tiffBuilder writes little-endian TIFF structures for hand-built tests.
type tiffBuilder struct{ b []byte }

func newTIFF(size int) *tiffBuilder {
	t := &tiffBuilder{b: make([]byte, size)}
	copy(t.b, "II*\x00\x08\x00\x00\x00")
	return t
}

// ifd writes an IFD at off with entries {tag, type, count, value} and the
// next-IFD offset; it returns the offset just past the IFD.
func (t *tiffBuilder) ifd(off int, next uint32, entries ...[4]uint32) int {
	le := binary.LittleEndian
	le.PutUint16(t.b[off:], uint16(len(entries)))
	for i, e := range entries {
		p := off + 2 + 12*i
		le.PutUint16(t.b[p:], uint16(e[0]))
		le.PutUint16(t.b[p+2:], uint16(e[1]))
		le.PutUint32(t.b[p+4:], e[2])
		le.PutUint32(t.b[p+8:], e[3])
	}
	end := off + 2 + 12*len(entries)
	le.PutUint32(t.b[end:], next)
	return end + 4
}

func (t *tiffBuilder) write(tb testing.TB, name string) string {
	return writeFile(tb, tb.TempDir(), name, t.b)
}

// writeFile writes b into the file name in dir and returns its path.
func writeFile(tb testing.TB, dir, name string, b []byte) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestImpossibleClaim: a 1 KiB TIFF claiming a 60000×60000 raw image is
// rejected with ErrCorrupt in well under 50 ms and 10 MB of allocation; a
// side over 65535 likewise.
func TestImpossibleClaim(t *testing.T) {
	for _, c := range []struct{ w, h uint32 }{{60000, 60000}, {70000, 10}, {0, 100}} {
		tb := newTIFF(1024)
		tb.ifd(8, 0,
			[4]uint32{tifftag.NewSubFileType, 4, 1, 0},
			[4]uint32{tifftag.ImageWidth, 4, 1, c.w},
			[4]uint32{tifftag.ImageLength, 4, 1, c.h},
			[4]uint32{tifftag.BitsPerSample, 3, 1, 16},
			[4]uint32{tifftag.Compression, 3, 1, 1},
			[4]uint32{tifftag.PhotometricInterpretation, 3, 1, 32803},
			[4]uint32{tifftag.StripOffsets, 4, 1, 200},
			[4]uint32{tifftag.SamplesPerPixel, 3, 1, 1},
			[4]uint32{tifftag.StripByteCounts, 4, 1, 800},
		)
		path := tb.write(t, fmt.Sprintf("claim%dx%d.dng", c.w, c.h))
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start := time.Now()
		h, err := Read(path)
		el := time.Since(start)
		runtime.ReadMemStats(&m1)
		alloc := m1.TotalAlloc - m0.TotalAlloc
		if c.w == 0 {
			// ImageWidth 0: not a raw candidate at all; no size is claimed.
			if errors.Is(err, rawerr.ErrCorrupt) || err == nil {
				t.Errorf("%d×%d: err %v, want ErrNotRaw/ErrUnsupported", c.w, c.h, err)
			}
			continue
		}
		if !errors.Is(err, rawerr.ErrCorrupt) {
			t.Errorf("%d×%d: err %v, want ErrCorrupt", c.w, c.h, err)
		} else if !strings.Contains(err.Error(), fmt.Sprintf("%d×%d", c.w, c.h)) || !strings.Contains(err.Error(), path) {
			t.Errorf("%d×%d: message %q should name the claim and the path", c.w, c.h, err)
		}
		if el > 50*time.Millisecond || alloc > 10<<20 {
			t.Errorf("%d×%d: took %v and allocated %d bytes", c.w, c.h, el, alloc)
		}
		if h.BytesRead != 1024 {
			t.Errorf("BytesRead %d, want 1024", h.BytesRead)
		}
		t.Logf("%d×%d in 1 KiB: %v, %v, %d bytes allocated", c.w, c.h, err, el, alloc)
	}
}

// TestIFDLoops: IFD chain cycles (A→B→A), a SubIFD pointing at itself and
// an Exif IFD pointing back at IFD0 end the walk (and goexif is given a
// copy with the cycle cut: on the raw bytes it loops forever).
func TestIFDLoops(t *testing.T) {
	tb := newTIFF(4096)
	tb.ifd(8, 400,
		[4]uint32{tifftag.Make, 2, 4, 0x004d4f43}, // "COM\0"
		[4]uint32{tifftag.ImageWidth, 4, 1, 64},
		[4]uint32{tifftag.ImageLength, 4, 1, 64},
		[4]uint32{tifftag.BitsPerSample, 3, 1, 16},
		[4]uint32{tifftag.PhotometricInterpretation, 3, 1, 32803},
		[4]uint32{tifftag.StripOffsets, 4, 1, 1024},
		[4]uint32{tifftag.StripByteCounts, 4, 1, 2048},
		[4]uint32{tifftag.SubIFDs, 4, 1, 500},
		[4]uint32{tifftag.ExifIFD, 4, 1, 8},
	)
	tb.ifd(400, 8, [4]uint32{tifftag.Orientation, 3, 1, 3}) // back to IFD0
	tb.ifd(500, 0, [4]uint32{tifftag.SubIFDs, 4, 1, 500}, [4]uint32{tifftag.ImageWidth, 4, 1, 8}, [4]uint32{tifftag.ImageLength, 4, 1, 8})
	path := tb.write(t, "loop.tif")
	done := make(chan struct{})
	var h *Header
	var err error
	go func() {
		defer close(done)
		h, err = readFile(path, false, nil)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Read did not return within 5 s on an IFD cycle")
	}
	if h.RawWidth != 64 || h.RawHeight != 64 || err != nil {
		t.Errorf("raw %d×%d, err %v", h.RawWidth, h.RawHeight, err)
	}
	// The cut copy decodes; the original would not return.
	b := append([]byte(nil), tb.b...)
	if !sanitizeTIFF(b, false) {
		t.Fatal("sanitizeTIFF refused a fixable cycle")
	}
	if x, err := exif.Decode(bytes.NewReader(b)); x == nil || len(x.Tiff.Dirs) != 2 {
		t.Errorf("goexif on the sanitised copy: %v, %v", x, err)
	}
	if binary.LittleEndian.Uint32(b[400+2+12:]) != 0 {
		t.Error("the A→B→A chain was not cut at B")
	}
}

// TestGoexifCountOverflow: a LONG tag with count 0x40000001 makes goexif
// compute 4×count in uint32 (= 4, an inline value) and then allocate 2^30
// int64s (8 GiB); sanitizeTIFF neutralises such entries.
func TestGoexifCountOverflow(t *testing.T) {
	tb := newTIFF(256)
	tb.ifd(8, 0, [4]uint32{tifftag.Make, 2, 4, 0x004d4f43}, [4]uint32{0x0111, 4, 0x40000001, 1})
	b := append([]byte(nil), tb.b...)
	if !sanitizeTIFF(b, false) {
		t.Fatal("sanitizeTIFF refused")
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	x, err := exif.Decode(bytes.NewReader(b))
	runtime.ReadMemStats(&m1)
	if x == nil || tagString(x, exif.Make) != "COM" {
		t.Errorf("goexif on the sanitised copy: %v", err)
	}
	if a := m1.TotalAlloc - m0.TotalAlloc; a > 1<<20 {
		t.Errorf("goexif allocated %d bytes", a)
	}
	r := decodeExif(tb.b, "test", false)
	if r.Make != "COM" {
		t.Errorf("decodeExif: %+v", r)
	}
}

// nikonShortMakerNote is a TIFF with Make "NIKON CORPORATION" and an Exif
// IFD whose MakerNote has 2 bytes (stored inline), plus a small raw IFD.
func nikonShortMakerNote() *tiffBuilder {
	tb := newTIFF(8192)
	copy(tb.b[300:], "NIKON CORPORATION\x00")
	copy(tb.b[320:], "NIKON D70\x00")
	tb.ifd(8, 0,
		[4]uint32{tifftag.ImageWidth, 4, 1, 64},
		[4]uint32{tifftag.ImageLength, 4, 1, 48},
		[4]uint32{tifftag.BitsPerSample, 3, 1, 12},
		[4]uint32{tifftag.Compression, 3, 1, 1},
		[4]uint32{tifftag.PhotometricInterpretation, 3, 1, 32803},
		[4]uint32{tifftag.Make, 2, 18, 300},
		[4]uint32{tifftag.Model, 2, 10, 320},
		[4]uint32{tifftag.StripOffsets, 4, 1, 1024},
		[4]uint32{tifftag.SamplesPerPixel, 3, 1, 1},
		[4]uint32{tifftag.StripByteCounts, 4, 1, 64 * 48 * 2},
		[4]uint32{tifftag.ExifIFD, 4, 1, 200},
	)
	tb.ifd(200, 0,
		[4]uint32{34855, 3, 1, 200},                  // ISO
		[4]uint32{tifftag.MakerNote, 7, 2, 0x00004e}, // "N\0"
	)
	return tb
}

// TestNikonMakerNotePanic: goexif's Nikon maker-note parser panics on a
// 2-byte MakerNote (it slices Val[:6]); Read recovers, reports it in
// Warnings and keeps the EXIF read before.
func TestNikonMakerNotePanic(t *testing.T) {
	tb := nikonShortMakerNote()
	// First prove the raw goexif call panics.
	x, err := exif.Decode(bytes.NewReader(tb.b))
	if x == nil {
		t.Fatalf("exif.Decode: %v", err)
	}
	panicked := func() (p any) {
		defer func() { p = recover() }()
		_ = mknote.NikonV3.Parse(x)
		return nil
	}()
	if panicked == nil {
		t.Fatal("goexif's Nikon maker-note parser did not panic on a 2-byte MakerNote; the recovery test proves nothing")
	}
	t.Logf("raw goexif panic: %v", panicked)

	h, err := Read(tb.write(t, "nikon.nef"))
	if err != nil && !sentinel(err) {
		t.Errorf("Read: %v", err)
	}
	found := false
	for _, w := range h.Warnings {
		found = found || strings.Contains(w, "panicked")
	}
	if !found {
		t.Errorf("no recovered panic reported: warnings %q", h.Warnings)
	}
	if h.Format != "NEF" || h.EXIF.Make != "NIKON CORPORATION" || h.EXIF.Model != "NIKON D70" || h.EXIF.ISO != 200 || h.RawWidth != 64 {
		t.Errorf("header %+v (err %v)", h, err)
	}
}

// TestNotRaw: empty, JPEG, text and random files.
func TestNotRaw(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty.cr2", nil, rawerr.ErrEmpty},
		{"photo.nef", []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"), rawerr.ErrNotRaw},
		{"notes.dng", []byte(strings.Repeat("this is a text file, not a raw\n", 40)), rawerr.ErrNotRaw},
		{"noise.arw", bytes.Repeat([]byte{0x00, 0x13, 0x97, 0xfe}, 300), rawerr.ErrNotRaw},
	}
	for _, c := range cases {
		p := writeFile(t, dir, c.name, c.data)
		h, err := Read(p)
		if !errors.Is(err, c.want) || h == nil || h.Path != p {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := Read(filepath.Join(dir, "missing.cr2")); err == nil || !strings.Contains(err.Error(), "missing.cr2") {
		t.Errorf("missing file: %v", err)
	}
}

// TestTruncated cuts every sample at several lengths: Read must not panic,
// and must return a header or an error wrapping a rawerr sentinel.
func TestTruncated(t *testing.T) {
	dir := t.TempDir()
	for _, f := range corpus(t, true) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cuts := []int{0, 1, 4, 7, 8, 9, 16, 24, 100, 500, 1000, 4096, 10000, 40000, 65536, 70000, 200000, len(data) / 2, len(data) - 1}
		for _, n := range cuts {
			if n < 0 || n > len(data) {
				continue
			}
			p := writeFile(t, dir, fmt.Sprintf("%s.%d", filepath.Base(f), n), data[:n])
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s cut at %d: panic %v", filepath.Base(f), n, r)
					}
				}()
				h, err := Read(p)
				if h == nil {
					t.Errorf("%s cut at %d: nil header", filepath.Base(f), n)
				}
				if err != nil && !sentinel(err) {
					t.Errorf("%s cut at %d: %v wraps no sentinel", filepath.Base(f), n, err)
				}
				if h.BytesRead > MaxRead {
					t.Errorf("%s cut at %d: read %d bytes", filepath.Base(f), n, h.BytesRead)
				}
			}()
			os.Remove(p)
		}
	}
}

// TestBytesReadPerFormat logs the bytes read per format and checks the
// budget.
func TestBytesReadPerFormat(t *testing.T) {
	per := map[string][]string{}
	for _, f := range corpus(t, true) {
		h, _ := Read(f)
		st, _ := os.Stat(f)
		if h.BytesRead > MaxRead || h.BytesRead > st.Size() {
			t.Errorf("%s: BytesRead %d (file %d, budget %d)", filepath.Base(f), h.BytesRead, st.Size(), MaxRead)
		}
		per[h.Format] = append(per[h.Format], fmt.Sprintf("%d/%d", h.BytesRead, st.Size()))
	}
	keys := make([]string, 0, len(per))
	for k := range per {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%-9s read/size: %s", k, strings.Join(per[k], " "))
	}
}

// fuzzSeeds are the first 64 KiB of the sample files plus the hand-built
// hazards.
func fuzzSeeds(f *testing.F) {
	for _, p := range corpus(f, true) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 64<<10)])
	}
	f.Add(nikonShortMakerNote().b[:1024])
	// Crashers found by either fuzz target are replayed by both.
	for _, d := range []string{"FuzzRead", "FuzzParse"} {
		m, _ := filepath.Glob(filepath.Join("testdata", "fuzz", d, "*"))
		for _, p := range m {
			if b, err := readCorpusFile(p); err == nil {
				f.Add(b)
			}
		}
	}
}

// readCorpusFile decodes a "go test fuzz v1" file holding one []byte.
func readCorpusFile(p string) ([]byte, error) {
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	lines := strings.SplitN(string(raw), "\n", 3)
	if len(lines) < 2 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "[]byte(") {
		return nil, fmt.Errorf("%s: not a fuzz corpus file", p)
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	return []byte(s), err
}

// FuzzRead: whatever the bytes, Read returns (no panic, no hang), within
// the read budget, with errors wrapping rawerr sentinels.
func FuzzRead(f *testing.F) { fuzzHeader(f, Read) }

// FuzzParse is FuzzRead without LibRaw: it exercises this package's own
// parsers (and goexif) thousands of times faster. Its crashers are kept
// under testdata/fuzz/FuzzParse; FuzzRead replays them too (seedsFrom).
func FuzzParse(f *testing.F) {
	fuzzHeader(f, func(p string) (*Header, error) { return readFile(p, false, nil) })
}

// fuzzHeader writes each input to a file of its own and checks that read
// returns a header within the read budget and an error, if any, that
// wraps a rawerr sentinel.
func fuzzHeader(f *testing.F, read func(path string) (*Header, error)) {
	fuzzSeeds(f)
	dir := f.TempDir()
	var n int
	var mu sync.Mutex
	f.Fuzz(func(t *testing.T, data []byte) {
		mu.Lock()
		n++
		name := fmt.Sprintf("in%d", n)
		mu.Unlock()
		p := writeFile(t, dir, name, data)
		defer os.Remove(p)
		h, err := read(p)
		if h == nil || h.BytesRead > MaxRead {
			t.Fatalf("header %v", h)
		}
		if err != nil && !sentinel(err) {
			t.Fatalf("error %v wraps no rawerr sentinel", err)
		}
	})
}

// linkCorpus makes n hard links (copies where linking fails) of the sample
// files in a temporary directory.
func linkCorpus(tb testing.TB, n int) []string {
	src := corpus(tb, false)
	dir := tb.TempDir()
	out := make([]string, n)
	for i := range out {
		s := src[i%len(src)]
		p := filepath.Join(dir, fmt.Sprintf("%04d_%s", i, filepath.Base(s)))
		if err := os.Link(s, p); err != nil {
			b, err := os.ReadFile(s)
			if err != nil {
				tb.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				tb.Fatal(err)
			}
		}
		out[i] = p
	}
	return out
}

// BenchmarkRead1000 reads the headers of 1000 files (links to the samples)
// per iteration and reports milliseconds per file.
func BenchmarkRead1000(b *testing.B) {
	files := linkCorpus(b, 1000)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for _, f := range files {
			Read(f)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N*len(files)), "ms/file")
}

// TestSonyLosslessARW: a hand-built ARW (Make SONY, the raw in a SubIFD
// with lossless-JPEG Compression 7, the layout of Sony's lossless
// compressed RAW) is reported Unsupported when the linked LibRaw is older
// than 0.21, and a compressed (32767) one is not.
func TestSonyLosslessARW(t *testing.T) {
	for _, c := range []struct {
		compression uint32
		variant     string
	}{{7, "lossless"}, {32767, "compressed"}} {
		const size = 256 << 10 // enough bytes for 24 MP at the density floor
		tb := newTIFF(size)
		copy(tb.b[300:], "SONY\x00")
		copy(tb.b[310:], "ILCE-7M4\x00")
		tb.ifd(8, 0,
			[4]uint32{tifftag.NewSubFileType, 4, 1, 1},
			[4]uint32{tifftag.ImageWidth, 4, 1, 160},
			[4]uint32{tifftag.ImageLength, 4, 1, 120},
			[4]uint32{271, 2, 5, 300},  // Make
			[4]uint32{272, 2, 9, 310},  // Model
			[4]uint32{330, 4, 1, 1024}, // SubIFDs
		)
		tb.ifd(1024, 0,
			[4]uint32{tifftag.NewSubFileType, 4, 1, 0},
			[4]uint32{tifftag.ImageWidth, 4, 1, 6000},
			[4]uint32{tifftag.ImageLength, 4, 1, 4000},
			[4]uint32{tifftag.BitsPerSample, 3, 1, 14},
			[4]uint32{tifftag.Compression, 3, 1, c.compression},
			[4]uint32{tifftag.PhotometricInterpretation, 3, 1, 32803},
			[4]uint32{tifftag.StripOffsets, 4, 1, 4096},
			[4]uint32{tifftag.SamplesPerPixel, 3, 1, 1},
			[4]uint32{tifftag.StripByteCounts, 4, 1, size - 4096},
		)
		h, _ := Read(tb.write(t, "sony.arw"))
		if h.Format != "ARW" || h.Variant != c.variant {
			t.Errorf("compression %d: format %q variant %q, want ARW %q", c.compression, h.Format, h.Variant, c.variant)
		}
		old := libraw.VersionNumber() < 0x001500
		if want := c.variant == "lossless" && old; (h.Unsupported != "") != want {
			t.Errorf("compression %d on LibRaw %s: Unsupported %q", c.compression, libraw.ShortVersion(), h.Unsupported)
		}
	}
}

// TestDNGMissingBlocks: a DNG whose raw IFD lists fewer strips than its
// RowsPerStrip needs has had its data stripped: ErrCorrupt, naming the
// counts.
func TestDNGMissingBlocks(t *testing.T) {
	const size = 64 << 10
	tb := newTIFF(size)
	tb.ifd(8, 0,
		[4]uint32{tifftag.NewSubFileType, 4, 1, 0},
		[4]uint32{tifftag.ImageWidth, 4, 1, 256},
		[4]uint32{tifftag.ImageLength, 4, 1, 256},
		[4]uint32{tifftag.BitsPerSample, 3, 1, 16},
		[4]uint32{tifftag.Compression, 3, 1, 1},
		[4]uint32{tifftag.PhotometricInterpretation, 3, 1, 32803},
		[4]uint32{tifftag.StripOffsets, 4, 1, 1024},
		[4]uint32{tifftag.SamplesPerPixel, 3, 1, 1},
		[4]uint32{tifftag.RowsPerStrip, 4, 1, 16},
		[4]uint32{tifftag.StripByteCounts, 4, 1, 8192},
		[4]uint32{tifftag.DNGVersion, 1, 4, 0x00000401},
	)
	_, err := Read(tb.write(t, "stripped.dng"))
	if !errors.Is(err, rawerr.ErrCorrupt) || !strings.Contains(err.Error(), "lists 1 of the 16 data blocks") {
		t.Fatalf("got %v, want ErrCorrupt naming 1 of 16 blocks", err)
	}
}

// TestCRWTimeZone: a CRW's capture time is the camera's wall clock
// (exiftool: 2018:01:01 13:03:32) whatever the machine's time zone.
func TestCRWTimeZone(t *testing.T) {
	prev := time.Local
	defer func() { time.Local = prev }()
	for _, loc := range []*time.Location{time.UTC, time.FixedZone("JST", 9*3600), time.FixedZone("EST", -5*3600)} {
		time.Local = loc
		h, err := Read(filepath.Join(testdata, "raw", "canond30_CRW.CRW"))
		if err != nil {
			t.Fatal(err)
		}
		if got := h.EXIF.DateTime.Format(time.DateTime); got != "2018-01-01 13:03:32" {
			t.Errorf("time zone %s: capture time %s, want 2018-01-01 13:03:32", loc, got)
		}
	}
}
