package batch

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/pipeline"

	"github.com/rawbatch/rawbatch/internal/rawerr"
)

// lossyTile0 is where the first lossy-JPEG tile of testdata/raw/
// canon_eos_6d.dng starts and how long it is (its raw SubIFD's TileOffsets
// and TileByteCounts, exiftool -b -SubIFD:TileOffsets).
const lossyTile0, lossyTile0Len = 203486, 42159

// damageLossyTile returns the lossy DNG with n bytes of the first tile's
// entropy-coded data (after its SOS header, a third of the way in)
// replaced by pseudo-random ones from seed, or with seed 0 by stuffed
// one-bits (FF 00: Huffman codes longer than any in the tables); the
// headers are intact.
func damageLossyTile(t *testing.T, b []byte, seed uint64, n int) []byte {
	t.Helper()
	b = bytes.Clone(b)
	tile := b[lossyTile0 : lossyTile0+lossyTile0Len]
	if !bytes.HasPrefix(tile, []byte{0xff, 0xd8}) {
		t.Fatalf("no JPEG tile at %d", lossyTile0)
	}
	sos := bytes.Index(tile, []byte{0xff, 0xda})
	if sos < 0 {
		t.Fatal("no SOS marker in the tile")
	}
	data := sos + 2 + int(tile[sos+2])<<8 | int(tile[sos+3])
	r := rand.New(rand.NewPCG(seed, 1))
	at := data + (len(tile)-data)/3
	for i := range n {
		switch {
		case seed != 0:
			tile[at+i] = byte(r.UintN(256))
		case i%2 == 0:
			tile[at+i] = 0xff
		default:
			tile[at+i] = 0
		}
	}
	return b
}

// TestDamagedLossyDNG: a lossy DNG whose JPEG tile data is damaged (libjpeg
// warns "Corrupt JPEG data: ..." and LibRaw returns success) fails as
// corrupt, with libjpeg's words and no output; the intact file converts.
func TestDamagedLossyDNG(t *testing.T) {
	src := mustRead(t, filepath.Join(testdata, "raw", "canon_eos_6d.dng"))
	in, out := t.TempDir(), t.TempDir()
	touch(t, filepath.Join(in, "intact.dng"), src)
	touch(t, filepath.Join(in, "damaged1.dng"), damageLossyTile(t, src, 1, 200))
	touch(t, filepath.Join(in, "damaged2.dng"), damageLossyTile(t, src, 0, 64))
	p, err := PlanBatch([]string{in}, out, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	p.Inspect(pipeline.DefaultSettings(), 1, 2)
	r := &Runner{Settings: pipeline.DefaultSettings(), Jobs: 2, Exe: os.Args[0], Timeout: 60 * time.Second}
	for _, fr := range r.Run(context.Background(), p) {
		name := filepath.Base(fr.Input)
		_, serr := os.Stat(filepath.Join(out, strings.TrimSuffix(name, ".dng")+".jpg"))
		if name == "intact.dng" {
			if fr.Status != StatusConverted || serr != nil {
				t.Errorf("%s: %v %v", name, fr.Status, fr.Err)
			}
			continue
		}
		t.Logf("%s: %v", name, fr.Err)
		if fr.Status != StatusFailed || !errors.Is(fr.Err, rawerr.ErrCorrupt) || !strings.Contains(fr.Err.Error(), "damaged JPEG data (libjpeg: Corrupt JPEG data: ") {
			t.Errorf("%s: %v %v, want failed as corrupt JPEG data (messages %q)", name, fr.Status, fr.Err, fr.Messages)
		}
		if serr == nil {
			t.Errorf("%s: an output was written", name)
		}
	}
}
