package header

import (
	"path/filepath"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// TestCR3IdentifiedByLibRaw021: LibRaw 0.21 (the bundled build) identifies
// the three CR3 stubs of the EOS R and R6 that 0.20.2 refuses, and Read
// gives them raw-identify's Output size, taken from LibRaw. The oracle must
// be the same LibRaw (the bundled raw-identify, first on PATH through
// make); 0.20's raw-identify does not identify them and fails the test.
func TestCR3IdentifiedByLibRaw021(t *testing.T) {
	if libraw.VersionNumber() < libraw021 {
		t.Skipf("LibRaw %s: these files need 0.21", libraw.ShortVersion())
	}
	for _, f := range []string{"exiv2_Canon-R6-pruned.CR3", "nomexif_canon-r6.cr3", "filetype_fixture.cr3"} {
		p := filepath.Join(testdata, "stubs", f)
		ri, ok := rawIdentify(t, p)
		if !ok {
			t.Errorf("%s: raw-identify does not identify it (is it LibRaw %s's?)", f, libraw.ShortVersion())
			continue
		}
		h, _ := Read(p)
		if !h.SizeFromLibRaw || h.Width != ri.outputW || h.Height != ri.outputH {
			t.Errorf("%s: %d×%d (from LibRaw: %v), raw-identify Output size %d×%d", f, h.Width, h.Height, h.SizeFromLibRaw, ri.outputW, ri.outputH)
		}
	}
}
