package pipeline

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// exiftoolTags returns exiftool's reading of tags of path, one value per
// tag ("" when absent). A file exiftool does not know (a headerless raw)
// has no tags when unknownOK, and fails the test otherwise.
func exiftoolTags(t *testing.T, bin, path string, unknownOK bool, tags ...string) []string {
	t.Helper()
	args := []string{"-m", "-f", "-s3"}
	for _, tag := range tags {
		args = append(args, "-"+tag)
	}
	out, err := exec.Command(bin, append(args, path)...).CombinedOutput()
	if err != nil && unknownOK && (strings.Contains(string(out), "Unknown file type") || strings.Contains(string(out), "Unsupported RAW file type")) {
		return make([]string, len(tags))
	}
	if err != nil {
		t.Fatalf("exiftool %s: %v\n%s", path, err, out)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != len(tags) {
		t.Fatalf("exiftool %s: %d lines for %d tags: %q", path, len(lines), len(tags), out)
	}
	for i, l := range lines {
		if l == "-" {
			lines[i] = ""
		}
	}
	return lines
}

// TestMakeModelAsInRaw converts every sample file and compares the
// output's Make and Model with exiftool's reading of the raw:
// "Canon EOS 6D", not LibRaw's "EOS 6D". A raw without Make gets none, not
// LibRaw's made-up one (the Adobe SDK DNGs, with only UniqueCameraModel
// "Test Camera", would get Make "Test"); a DNG without Make and Model has its
// UniqueCameraModel as Model; LibRaw's names stand in only for a file
// exiftool cannot read (the headerless Kodak file).
func TestMakeModelAsInRaw(t *testing.T) {
	bin := testtool.Need(t, "exiftool")
	dir := t.TempDir()
	checked, without := 0, 0
	for _, in := range rawFiles(t) {
		t.Run(filepath.Base(in), func(t *testing.T) {
			raw := exiftoolTags(t, bin, in, true, "Make", "Model", "UniqueCameraModel", "FileType")
			out := filepath.Join(dir, filepath.Base(in)+".jpg")
			if _, err := ConvertFile(context.Background(), in, out, DefaultSettings()); err != nil {
				t.Skipf("not convertible here: %v", err)
			}
			got := exiftoolTags(t, bin, out, false, "Make", "Model")
			if raw[3] == "" { // headerless: LibRaw's names
				if got[0] == "" || got[1] == "" {
					t.Errorf("Make, Model = %q, %q: a headerless raw gets LibRaw's names", got[0], got[1])
				}
				return
			}
			want := raw[:2]
			if want[0] == "" && want[1] == "" {
				want = []string{"", raw[2]}
				without++
			}
			if got[0] != want[0] || got[1] != want[1] {
				t.Errorf("Make, Model = %q, %q; want %q, %q (the raw: Make %q, Model %q, UniqueCameraModel %q)", got[0], got[1], want[0], want[1], raw[0], raw[1], raw[2])
			}
			if raw[0] != "" {
				checked++
			}
		})
	}
	if checked < 2 || without < 1 {
		t.Fatalf("only %d sample files carry a Make to compare, %d none", checked, without)
	}
}

// TestDatesAsInRaw converts every sample file and compares the output's
// date tags with the raw's: the same strings, and no others (a DNG with
// only ModifyDate must not get it as DateTimeOriginal, nor its OffsetTime
// as OffsetTimeOriginal: photo managers would sort by a capture time that
// is a modification time). A CRW's CIFF capture time becomes
// DateTimeOriginal.
func TestDatesAsInRaw(t *testing.T) {
	bin := testtool.Need(t, "exiftool")
	dir := t.TempDir()
	tags := []string{"ExifIFD:DateTimeOriginal", "IFD0:ModifyDate", "ExifIFD:CreateDate",
		"ExifIFD:OffsetTimeOriginal", "ExifIFD:OffsetTime", "ExifIFD:OffsetTimeDigitized",
		"ExifIFD:SubSecTimeOriginal", "ExifIFD:SubSecTime", "ExifIFD:SubSecTimeDigitized"}
	withoutOriginal := 0
	for _, in := range rawFiles(t) {
		t.Run(filepath.Base(in), func(t *testing.T) {
			want := exiftoolTags(t, bin, in, true, append(tags, "CanonRaw:DateTimeOriginal")...)
			if want[0] == "" {
				want[0] = want[len(tags)] // CRW
			}
			out := filepath.Join(dir, filepath.Base(in)+".jpg")
			if _, err := ConvertFile(context.Background(), in, out, DefaultSettings()); err != nil {
				t.Skipf("not convertible here: %v", err)
			}
			got := exiftoolTags(t, bin, out, false, tags...)
			for i, tag := range tags {
				if got[i] != want[i] {
					t.Errorf("%s = %q, the raw has %q", tag, got[i], want[i])
				}
			}
			if want[0] == "" && want[1] != "" {
				withoutOriginal++
			}
		})
	}
	if withoutOriginal == 0 {
		t.Fatal("no sample file has a ModifyDate without DateTimeOriginal")
	}
}

// TestMetadataMakeModelStubs checks Metadata's Make and Model for the
// header-only stubs of many cameras (cut short, they cannot be decoded)
// against exiftool's reading of each file.
func TestMetadataMakeModelStubs(t *testing.T) {
	bin := testtool.Need(t, "exiftool")
	files, _ := filepath.Glob(filepath.Join(testdata, "stubs", "*"))
	if len(files) < 5 {
		t.Fatalf("%d stub files in testdata/stubs", len(files))
	}
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			want := exiftoolTags(t, bin, in, true, "Make", "Model")
			if want[0] == "" {
				t.Skip("exiftool finds no Make")
			}
			// The stubs are cut short: Read calls them corrupt but still
			// returns what their header says.
			hdr, _ := header.Read(in)
			info, _, _, _ := libraw.Identify(in)
			md := Metadata(info, hdr)
			if md.Make != want[0] || md.Model != want[1] {
				t.Errorf("Make, Model = %q, %q; the raw has %q, %q (LibRaw: %q, %q)", md.Make, md.Model, want[0], want[1], info.Make, info.Model)
			}
		})
	}
}

// TestOutputICCDescriptions converts one synthetic DNG into every colour
// space and format and reads each output's profile description back with
// exiftool: editors show "Adobe RGB (1998) compatible", not
// the compact profile's "A98C".
func TestOutputICCDescriptions(t *testing.T) {
	bin := testtool.Need(t, "exiftool")
	dir := t.TempDir()
	in := writeChart(t, dir, testChart(), 1, 0)
	want := map[string]string{
		"srgb": "sRGB IEC61966-2.1", "displayp3": "Display P3", "adobergb": "Adobe RGB (1998) compatible",
		"prophoto": "ProPhoto RGB", "rec2020": "Rec. ITU-R BT.2020",
	}
	var outs []OutputSpec
	for space := range want {
		for _, f := range []struct{ format, ext string }{{"jpeg", "jpg"}, {"tiff16", "tif"}, {"webp", "webp"}, {"png8", "png"}, {"png16", "16.png"}} {
			name := space + "-" + f.format
			outs = append(outs, OutputSpec{Variant: Variant{Name: name, Format: f.format, Space: space, Size: 32},
				Path: filepath.Join(dir, "c."+name+"."+f.ext)})
		}
	}
	if _, err := ConvertVariants(context.Background(), in, outs, referenceSettings(), nil); err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		got := exiftoolTags(t, bin, o.Path, false, "ICC_Profile:ProfileDescription")[0]
		if w := want[o.Variant.Space]; got != w {
			t.Errorf("%s: profile description %q, want %q", filepath.Base(o.Path), got, w)
		}
	}
}
