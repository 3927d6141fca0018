package encode

import (
	"bytes"
	"errors"
	"fmt"
	"image/jpeg"
	"testing"
)

// gradientRows returns rows of a w×h test image of bpp bytes a sample (1
// or 2, big-endian), and bands of those rows rows at a time, counting the
// calls of each.
func gradientRows(w, h, bpp int) (row func(y int, dst []byte), bands func(rows int) Bands, calls *[2]int) {
	calls = new([2]int)
	sample := func(x, y, c int) int { return (x*7 + y*13 + c*101 + x*y) % (1 << (8 * bpp)) }
	put := func(y int, dst []byte) {
		for x := range w {
			for c := range 3 {
				v, i := sample(x, y, c), (x*3+c)*bpp
				if bpp == 2 {
					dst[i], dst[i+1] = byte(v>>8), byte(v)
				} else {
					dst[i] = byte(v)
				}
			}
		}
	}
	row = func(y int, dst []byte) { calls[0]++; put(y, dst) }
	bands = func(rows int) Bands {
		next := 0
		return Bands{Rows: rows, Fill: func(y0 int, dst []byte) {
			calls[1]++
			if y0 != next {
				panic(fmt.Sprintf("band at %d, want %d", y0, next))
			}
			n := len(dst) / (3 * bpp * w)
			for i := range n {
				put(y0+i, dst[i*3*bpp*w:(i+1)*3*bpp*w])
			}
			next = y0 + n
		}}
	}
	return row, bands, calls
}

// TestEncodeBesideBands: a JPEG or TIFF16 encoded beside the producer of
// its bands (RowsRGB8.Bands, RowsRGB16.Bands: the encoder on its own
// goroutine, the bands through the queue) is the same file byte for byte
// as one encoded from Row, for bands that divide the height, that do not,
// of one row and of more rows than the image; Row is then not called.
func TestEncodeBesideBands(t *testing.T) {
	const w, h = 77, 203
	for _, rows := range []int{64, 29, 1, 500} {
		row, bands, calls := gradientRows(w, h, 1)
		var want, got bytes.Buffer
		o := JPEGOptions{Quality: 90}
		if err := JPEGRows(&want, RowsRGB8{W: w, H: h, Row: row}, o, nil, Metadata{}); err != nil {
			t.Fatal(err)
		}
		calls[0] = 0
		if err := JPEGRows(&got, RowsRGB8{W: w, H: h, Row: row, Bands: bands(rows)}, o, nil, Metadata{}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) || calls[0] != 0 || calls[1] != (h+rows-1)/rows {
			t.Errorf("JPEG, bands of %d rows: same bytes %v (%d and %d), Row called %d times, %d bands; want the same, 0, %d",
				rows, bytes.Equal(got.Bytes(), want.Bytes()), got.Len(), want.Len(), calls[0], calls[1], (h+rows-1)/rows)
		}
		if _, err := jpeg.Decode(bytes.NewReader(got.Bytes())); err != nil {
			t.Errorf("JPEG, bands of %d rows: %v", rows, err)
		}

		row16, bands16, calls16 := gradientRows(w, h, 2)
		want.Reset()
		got.Reset()
		if err := TIFF16RowsOptions(&want, RowsRGB16{W: w, H: h, Row: row16}, nil, Metadata{}, TIFFOptions{}); err != nil {
			t.Fatal(err)
		}
		calls16[0] = 0
		if err := TIFF16RowsOptions(&got, RowsRGB16{W: w, H: h, Row: row16, Bands: bands16(rows)}, nil, Metadata{}, TIFFOptions{}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) || calls16[0] != 0 {
			t.Errorf("TIFF16, bands of %d rows: same bytes %v, Row called %d times", rows, bytes.Equal(got.Bytes(), want.Bytes()), calls16[0])
		}
	}
}

// failingWriter fails every write.
type failingWriter struct{}

var errWrite = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

// TestEncodeBesideBandsError: an encoder that fails (its writer does)
// ends the encode with its error, the producer stopping before the last
// band instead of waiting for it (no deadlock).
func TestEncodeBesideBandsError(t *testing.T) {
	const w, h = 64, 4000
	_, bands, calls := gradientRows(w, h, 2)
	// The TIFF writer writes as it goes (the JPEG one only at the end:
	// optimised Huffman tables).
	err := TIFF16RowsOptions(failingWriter{}, RowsRGB16{W: w, H: h, Bands: bands(8)}, nil, Metadata{}, TIFFOptions{})
	if !errors.Is(err, errWrite) {
		t.Errorf("error %v, want the writer's", err)
	}
	if calls[1] >= h/8 {
		t.Errorf("%d bands made of %d: the producer did not stop", calls[1], h/8)
	}
}
