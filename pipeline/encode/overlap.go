package encode

// Encoding beside row production: a producer that makes its
// rows a band at a time (Bands) hands them to the encoder through a
// bounded queue, the encoder running on its own goroutine (JPEG: locked
// to its OS thread, its libjpeg object created, used and closed there)
// while the caller's goroutine goes on making the next bands. The
// encoder reads the same rows in the same order as through Row, so the
// file written is the same byte for byte.

// Bands is a producer of an image's rows made Rows at a time, for
// encoders that run beside it (RowsRGB8.Bands, RowsRGB16.Bands):
// Fill(y0, dst) fills rows y0 to y0+n−1, n = min(Rows, H−y0), into dst
// (n rows of the image's row bytes, R G B interleaved as Row writes
// them). Fill is called on the encoder's caller's goroutine for y0 = 0,
// Rows, 2·Rows, ... in order, each once.
type Bands struct {
	Rows int
	Fill func(y0 int, dst []byte)
}

// QueueBands is how many filled bands wait for the encoder at most; one
// more is being read by it, one more filled: QueueBands+1 band buffers
// (OverlapBytes).
const QueueBands = 2

// OverlapBytes is the memory of the queue of an encode beside production
// (Bands) of bands of rows rows of rowBytes bytes: QueueBands+1 band
// buffers, in bytes.
func OverlapBytes(rows, rowBytes int) int64 {
	return int64(QueueBands+1) * int64(rows) * int64(rowBytes)
}

// overlapped runs encode on its own goroutine, its rows (row(y, dst), asked
// in order 0 to h−1, each once, dst of rowBytes) taken from the bands b
// fills on the caller's goroutine, at most QueueBands ahead of the
// encoder, and returns encode's error. When encode returns early (an
// error) the bands not made yet are not made.
func overlapped(h, rowBytes int, b Bands, encode func(row func(y int, dst []byte)) error) error {
	n := max(1, b.Rows)
	type band struct {
		y0  int
		buf []byte
	}
	full := make(chan band, QueueBands)
	free := make(chan []byte, QueueBands+1)
	for range QueueBands + 1 {
		free <- make([]byte, n*rowBytes)
	}
	stop := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		var cur band
		have := false
		err := encode(func(y int, dst []byte) {
			for !have || y >= cur.y0+n {
				if have {
					free <- cur.buf // never blocks: one slot per buffer
				}
				cur, have = <-full, true
			}
			copy(dst, cur.buf[(y-cur.y0)*rowBytes:(y-cur.y0+1)*rowBytes])
		})
		close(stop)
		errc <- err
	}()
	for y0 := 0; y0 < h; y0 += n {
		var buf []byte
		select {
		case buf = <-free:
		case <-stop:
			return <-errc
		}
		b.Fill(y0, buf[:min(n, h-y0)*rowBytes])
		select {
		case full <- band{y0: y0, buf: buf}:
		case <-stop:
			return <-errc
		}
	}
	return <-errc
}
