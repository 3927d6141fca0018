package pipeline

import (
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// TestLibRawDemosaic: the demosaic named for a file follows LibRaw 0.21's
// dcraw_process choice.
func TestLibRawDemosaic(t *testing.T) {
	bayer := libraw.Info{Filters: 0x94949494, Colors: 3}
	for _, c := range []struct {
		info libraw.Info
		dem  Demosaic
		half bool
		want string
	}{
		{bayer, "rcd", false, "ahd"}, {bayer, "ahd", false, "ahd"}, {bayer, "dcb", false, "dcb"},
		{bayer, "ppg", false, "ppg"}, {bayer, "ahd", true, DemosaicNone},
		{libraw.Info{Filters: 0, Colors: 3}, "rcd", false, DemosaicNone},
		{libraw.Info{Filters: 9, Colors: 3}, "rcd", false, DemosaicXTrans},
		{libraw.Info{Filters: 9, Colors: 3}, "linear", false, "linear"},
		{libraw.Info{Filters: 0xb4b4b4b4, Colors: 4}, "ahd", false, "vng"},
	} {
		s := DefaultSettings()
		s.Demosaic, s.HalfSize = c.dem, c.half
		if got := libRawDemosaic(c.info, s); got != c.want {
			t.Errorf("filters %#x colours %d, --demosaic %s half %v: %q, want %q", c.info.Filters, c.info.Colors, c.dem, c.half, got, c.want)
		}
	}
}
