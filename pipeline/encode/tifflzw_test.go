package encode

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	xlzw "golang.org/x/image/tiff/lzw"
)

// The LZW streams decode, through x/image's TIFF LZW reader (an
// independent implementation with the early code-width change), to the
// input: short, repetitive and random data, long enough for several
// ClearCodes and every code width.
func TestLZWRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 300000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	smooth := make([]byte, 300000)
	for i := range smooth {
		smooth[i] = byte(i/1000) + byte(rng.IntN(3))
	}
	cases := map[string][]byte{
		"empty": {}, "one": {7}, "two": {7, 7}, "run": bytes.Repeat([]byte{0}, 100000),
		"text": bytes.Repeat([]byte("TOBEORNOTTOBEORTOBEORNOT#"), 2000), "random": random, "smooth": smooth,
	}
	for n := 1; n < 700; n += 37 { // near the 9→10 bit change
		cases["prefix"+string(rune('a'+n%26))+string(rune('a'+n/26))] = random[:n*3]
	}
	e := &lzwEncoder{}
	for name, in := range cases {
		z := e.encode(in)
		out, err := io.ReadAll(xlzw.NewReader(bytes.NewReader(z), xlzw.MSB, 8))
		if err != nil {
			t.Errorf("%s (%d bytes): decoding: %v", name, len(in), err)
			continue
		}
		if !bytes.Equal(out, in) {
			t.Errorf("%s: %d bytes decode to %d different bytes", name, len(in), len(out))
		}
		if name == "run" && len(z) > len(in)/20 {
			t.Errorf("run of %d zeros compresses to %d bytes", len(in), len(z))
		}
	}
}
