package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/internal/testtool"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// notCopied is the one list of the EXIF tags (exiftool's names, in groups
// IFD0, ExifIFD and GPS) that outputs do not copy from the raw, with why
// (docs/metadata.md): the raw's own image structure, colour descriptions
// the output's ICC profile replaces, ExifVersion (the writer's own), the
// maker note, the attributes counted in the raw's pixels (focal-plane
// resolution, subject area and location), and Orientation and Software,
// which rawbatch sets. IFD0 tags
// numbered 50706 and above (DNG 1.0–1.7 and later Adobe tags) are left out
// too (notCopiedTag).
var notCopied = map[string]string{
	"SubfileType": "structure", "OldSubfileType": "structure", "ImageWidth": "structure", "ImageHeight": "structure",
	"BitsPerSample": "structure", "Compression": "structure", "PhotometricInterpretation": "structure",
	"StripOffsets": "structure", "SamplesPerPixel": "structure", "RowsPerStrip": "structure",
	"StripByteCounts": "structure", "PlanarConfiguration": "structure", "XResolution": "structure",
	"YResolution": "structure", "ResolutionUnit": "structure", "TileWidth": "structure", "TileLength": "structure",
	"TileOffsets": "structure", "TileByteCounts": "structure", "CFARepeatPatternDim": "structure",
	"CFAPattern2": "structure", "CFAPattern": "structure", "ExifImageWidth": "structure",
	"ExifImageHeight": "structure", "ComponentsConfiguration": "structure", "CompressedBitsPerPixel": "structure",
	"ThumbnailOffset": "structure", "ThumbnailLength": "structure", "PreviewImageStart": "structure",
	"PreviewImageLength": "structure", "YCbCrPositioning": "structure", "YCbCrSubSampling": "structure",
	"YCbCrCoefficients": "structure", "ReferenceBlackWhite": "structure", "TIFF-EPStandardID": "structure", "PreviewImage": "structure",
	"ColorSpace": "ICC", "Gamma": "ICC", "WhitePoint": "ICC", "PrimaryChromaticities": "ICC", "TransferFunction": "ICC",
	"ExifVersion": "writer's own", "MakerNote": "offsets break", "ApplicationNotes": "XMP is rawbatch's own",
	"Orientation": "set to 1", "Software": "set to rawbatch",
	"OECF": "byte-order dependent", "SpatialFrequencyResponse": "byte-order dependent",
	"DeviceSettingDescription": "byte-order dependent",
	"FocalPlaneXResolution":    "raw's pixels", "FocalPlaneYResolution": "raw's pixels", "FocalPlaneResolutionUnit": "raw's pixels",
	"SubjectArea": "raw's pixels", "SubjectLocation": "raw's pixels",
}

// notCopiedTag reports whether exiftool's tag name, numbered id, of group
// is left out of the outputs (notCopied).
func notCopiedTag(group, name string, id float64) bool {
	if _, ok := notCopied[name]; ok {
		return true
	}
	return group == "IFD0" && id >= tifftag.DNGVersion
}

// exiftoolEXIF returns exiftool's reading (-n: numbers as numbers) of the
// IFD0, ExifIFD and GPS tags of path, by "GROUP:Name", and their numbers.
func exiftoolEXIF(t *testing.T, bin, path string) (vals map[string]string, ids map[string]float64) {
	t.Helper()
	out, err := exec.Command(bin, "-j", "-G1", "-D", "-n", "-m", path).Output()
	if err != nil {
		t.Fatalf("exiftool %s: %v\n%s", path, err, out)
	}
	var r []map[string]json.RawMessage
	if err := json.Unmarshal(out, &r); err != nil || len(r) != 1 {
		t.Fatalf("exiftool %s: %v", path, err)
	}
	vals, ids = map[string]string{}, map[string]float64{}
	for k, raw := range r[0] {
		g, _, _ := strings.Cut(k, ":")
		if g != "IFD0" && g != "ExifIFD" && g != "GPS" && g != "XMP-xmpMM" && g != "XMP-xmp" {
			continue
		}
		var v struct {
			ID  any             `json:"id"`
			Val json.RawMessage `json:"val"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("exiftool %s: %s: %v", path, k, err)
		}
		vals[k] = string(v.Val)
		if n, ok := v.ID.(float64); ok {
			ids[k] = n
		}
	}
	return vals, ids
}

// compareEXIF checks that every tag exiftool reads from the raw in IFD0,
// ExifIFD and GPS (but those notCopied) is in the output with the same
// value, that Orientation is 1 and that the XMP names the raw; it returns
// how many tags it compared.
func compareEXIF(t *testing.T, bin, raw, out string) int {
	t.Helper()
	want, ids := exiftoolEXIF(t, bin, raw)
	got, _ := exiftoolEXIF(t, bin, out)
	n := 0
	for k, w := range want {
		g, name, _ := strings.Cut(k, ":")
		if g != "IFD0" && g != "ExifIFD" && g != "GPS" || notCopiedTag(g, name, ids[k]) {
			continue
		}
		if w == `""` || strings.Trim(w, `" 0:`) == "" {
			continue // an empty string or a date of zeros: not a value
		}
		n++
		if got[k] != w {
			t.Errorf("%s: %s = %s, want %s (the raw's)", filepath.Base(out), k, got[k], w)
		}
	}
	if o := got["IFD0:Orientation"]; o != "1" {
		t.Errorf("%s: Orientation %s, want 1", filepath.Base(out), o)
	}
	if d, w := got["XMP-xmpMM:DerivedFromFilePath"], fmt.Sprintf("%q", filepath.Base(raw)); d != w {
		t.Errorf("%s: XMP DerivedFrom filePath %s, want %s", filepath.Base(out), d, w)
	}
	return n
}

// metadataDNG writes a synthetic DNG with the capture tags a camera
// writes: artist, copyright, rating and an XMP label in IFD0; exposure
// program and compensation, metering, flash, white balance, 35 mm focal
// length, serial numbers, sub-seconds and time offset in the Exif IFD;
// and a position in the GPS IFD; its Orientation is 6 (rotated 90° CW).
func metadataDNG(t *testing.T, dir string) string {
	t.Helper()
	xmp := `<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmp:Label="Red"/></rdf:RDF></x:xmpmeta><?xpacket end="w"?>`
	ts := []synthdng.Tag{
		{Dir: tifftag.DirImage, ID: tifftag.Artist, ASCII: "Ada Lovelace"},
		{Dir: tifftag.DirImage, ID: tifftag.Copyright, ASCII: "(c) 2024 Ada Lovelace, CC BY 4.0"},
		{Dir: tifftag.DirImage, ID: tifftag.Rating, Shorts: []uint16{4}},
		{Dir: tifftag.DirImage, ID: tifftag.XMLPacket, Bytes: []byte(xmp)},
		{Dir: tifftag.DirExif, ID: 34850, Shorts: []uint16{3}},        // ExposureProgram: aperture priority
		{Dir: tifftag.DirExif, ID: 37380, SRationals: []int32{-2, 3}}, // ExposureCompensation
		{Dir: tifftag.DirExif, ID: 37383, Shorts: []uint16{5}},        // MeteringMode: multi-segment
		{Dir: tifftag.DirExif, ID: 37385, Shorts: []uint16{16}},       // Flash: off, did not fire
		{Dir: tifftag.DirExif, ID: 41987, Shorts: []uint16{1}},        // WhiteBalance: manual
		{Dir: tifftag.DirExif, ID: 41989, Shorts: []uint16{52}},       // FocalLengthIn35mmFormat
		{Dir: tifftag.DirExif, ID: 42033, ASCII: "033024001432"},      // BodySerialNumber
		{Dir: tifftag.DirExif, ID: 42036, ASCII: "EF35mm f/2 IS USM"}, // LensModel
		{Dir: tifftag.DirExif, ID: 42037, ASCII: "00001066ba"},        // LensSerialNumber
		{Dir: tifftag.DirExif, ID: tifftag.OffsetTimeOriginal, ASCII: "+02:00"},
		{Dir: tifftag.DirExif, ID: tifftag.SubSecTimeOriginal, ASCII: "42"},
		{Dir: tifftag.DirGPS, ID: 0, Bytes: []byte{2, 3, 0, 0}},                    // GPSVersionID
		{Dir: tifftag.DirGPS, ID: 1, ASCII: "N"},                                   // GPSLatitudeRef
		{Dir: tifftag.DirGPS, ID: 2, Rationals: []uint32{48, 1, 51, 1, 2412, 100}}, // GPSLatitude
		{Dir: tifftag.DirGPS, ID: 3, ASCII: "E"},                                   // GPSLongitudeRef
		{Dir: tifftag.DirGPS, ID: 4, Rationals: []uint32{2, 1, 17, 1, 4011, 100}},  // GPSLongitude
		{Dir: tifftag.DirGPS, ID: 5, Bytes: []byte{0}},                             // GPSAltitudeRef
		{Dir: tifftag.DirGPS, ID: 6, Rationals: []uint32{3512, 100}},               // GPSAltitude
		{Dir: tifftag.DirGPS, ID: 7, Rationals: []uint32{5, 1, 29, 1, 51, 1}},      // GPSTimeStamp
		{Dir: tifftag.DirGPS, ID: 29, ASCII: "2024:05:01"},                         // GPSDateStamp
	}
	in := filepath.Join(dir, "meta.dng")
	s := synthdng.Spec{Width: 64, Height: 48, Make: "Canon", Model: "Canon EOS 6D", Orientation: 6,
		Scene:     func(x, y, c int) float64 { return 0.2 + 0.1*float64(c) },
		Timestamp: time.Date(2024, 5, 1, 7, 29, 51, 0, time.UTC), ISO: 400, ExposureTime: 1.0 / 125, FNumber: 5.6, FocalLength: 35,
		Tags: ts}
	if err := synthdng.WriteFile(in, s); err != nil {
		t.Fatal(err)
	}
	return in
}

// metadataFormats are the output formats the metadata tests write.
var metadataFormats = []struct{ format, ext string }{{"jpeg", "jpg"}, {"png16", "png"}, {"tiff16", "16.tif"}, {"tiff8", "8.tif"}, {"webp", "webp"}}

func convertAllFormats(t *testing.T, in, dir string, s Settings) []OutputSpec {
	t.Helper()
	var outs []OutputSpec
	for _, f := range metadataFormats {
		outs = append(outs, OutputSpec{Variant: Variant{Name: f.format, Format: f.format, Space: "srgb"}.Normal(),
			Path: filepath.Join(dir, strings.TrimSuffix(filepath.Base(in), filepath.Ext(in))+"."+f.ext)})
	}
	if _, err := ConvertVariants(context.Background(), in, outs, s, nil); err != nil {
		t.Fatal(err)
	}
	return outs
}

// TestEXIFCopiedSynthetic: every standard and GPS tag of a synthetic DNG
// with the tags a camera writes is read back by exiftool from every
// output format with the raw's value; Orientation is 1; the XMP names the
// raw and carries its rating and label.
func TestEXIFCopiedSynthetic(t *testing.T) {
	bin := testtool.Need(t, "exiftool")
	dir := t.TempDir()
	in := metadataDNG(t, dir)
	for _, o := range convertAllFormats(t, in, dir, DefaultSettings()) {
		n := compareEXIF(t, bin, in, o.Path)
		if n < 30 {
			t.Errorf("%s: only %d tags compared", filepath.Base(o.Path), n)
		}
		got, _ := exiftoolEXIF(t, bin, o.Path)
		for k, w := range map[string]string{
			"GPS:GPSLatitude": "48.8567", "IFD0:Artist": `"Ada Lovelace"`, "ExifIFD:ExposureCompensation": "-0.6666666667",
			"ExifIFD:SubSecTimeOriginal": "42", "ExifIFD:OffsetTimeOriginal": `"+02:00"`, "ExifIFD:LensSerialNumber": `"00001066ba"`,
			"XMP-xmp:Rating": "4", "XMP-xmp:Label": `"Red"`, "IFD0:Software": `"rawbatch"`,
		} {
			if g := got[k]; g != w {
				t.Errorf("%s: %s = %s, want %s", filepath.Base(o.Path), k, g, w)
			}
		}
	}
}

// TestStripMetadataAndArtist: --strip-metadata leaves no GPS, no artist,
// no capture EXIF and no XMP in any format, but keeps the ICC profile;
// --artist and --copyright replace the raw's.
func TestStripMetadataAndArtist(t *testing.T) {
	bin := testtool.Need(t, "exiftool")
	dir := t.TempDir()
	in := metadataDNG(t, dir)
	s := DefaultSettings()
	s.StripMetadata = true
	for _, o := range convertAllFormats(t, in, filepath.Join(dir), s) {
		got, _ := exiftoolEXIF(t, bin, o.Path)
		for k := range got {
			g, name, _ := strings.Cut(k, ":")
			if g == "GPS" || g == "ExifIFD" || strings.HasPrefix(g, "XMP") || name == "Artist" || name == "Make" || name == "Copyright" {
				t.Errorf("%s: %s = %s with --strip-metadata", filepath.Base(o.Path), k, got[k])
			}
		}
		if got["IFD0:Orientation"] != "1" {
			t.Errorf("%s: Orientation %q, want 1", filepath.Base(o.Path), got["IFD0:Orientation"])
		}
		if d := exiftoolTags(t, bin, o.Path, false, "ICC_Profile:ProfileDescription")[0]; d != "sRGB IEC61966-2.1" {
			t.Errorf("%s: ICC profile %q with --strip-metadata", filepath.Base(o.Path), d)
		}
	}
	s = DefaultSettings()
	s.Artist, s.Copyright = "Grace Hopper", "(c) Grace Hopper"
	for _, o := range convertAllFormats(t, in, dir, s) {
		got, _ := exiftoolEXIF(t, bin, o.Path)
		if got["IFD0:Artist"] != `"Grace Hopper"` || got["IFD0:Copyright"] != `"(c) Grace Hopper"` {
			t.Errorf("%s: Artist %s, Copyright %s; want --artist's and --copyright's", filepath.Base(o.Path), got["IFD0:Artist"], got["IFD0:Copyright"])
		}
		if got["GPS:GPSLatitude"] == "" {
			t.Errorf("%s: --artist lost the GPS position", filepath.Base(o.Path))
		}
	}
}

// TestEXIFCopiedRealFiles: for every sample raw, every standard EXIF and
// GPS tag exiftool reads from it (but notCopied) is in each output format
// with the same value.
func TestEXIFCopiedRealFiles(t *testing.T) {
	bin := testtool.Need(t, "exiftool")
	dir := t.TempDir()
	s := DefaultSettings()
	s.HalfSize = true
	total := 0
	for _, in := range rawFiles(t) {
		t.Run(filepath.Base(in), func(t *testing.T) {
			sub := filepath.Join(dir, filepath.Base(in))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bin, "-m", "-FileType", in).CombinedOutput(); err != nil || !strings.Contains(string(out), "File Type") {
				t.Skipf("exiftool does not read %s (headerless raw): %s", filepath.Base(in), out)
			}
			n := 0
			for _, o := range convertAllFormats(t, in, sub, s) {
				n += compareEXIF(t, bin, in, o.Path)
			}
			t.Logf("%d tags compared over %d formats", n, len(metadataFormats))
			total += n
		})
	}
	if total < 100 {
		t.Errorf("only %d tags compared over all files and formats", total)
	}
}
