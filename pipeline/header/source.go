package header

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// Read budget. Every byte the parsers look at comes through a source, which
// reads the file in pages with io.ReaderAt and refuses to read more than
// MaxRead bytes in total.
const (
	// MaxRead is the most bytes Read reads from one file itself (LibRaw's
	// own reads during its open are not counted here): 512 KiB.
	MaxRead = 512 << 10
	// headRead is the size of the first read at offset 0 (or the whole file
	// when smaller): 64 KiB holds the IFDs and boxes of nearly every RAW
	// container measured.
	headRead = 64 << 10
	// pageSize is the unit of every later read (16 KiB, aligned).
	pageSize = 16 << 10
)

var (
	errRange  = errors.New("offset out of the file")
	errBudget = fmt.Errorf("read budget of %d bytes exhausted", MaxRead)
)

// source is a bounded, counting, page-cached view of a file.
type source struct {
	r     io.ReaderAt
	size  int64
	head  []byte           // file[0:len(head)]
	pages map[int64][]byte // page index -> bytes (last page may be short)
	n     int64            // bytes actually read
	ioErr error            // first read error other than EOF
	pool  *[]byte          // head's buffer, returned by release
}

// release returns the head buffer to the pool; s must not be used after.
func (s *source) release() {
	if s.pool != nil {
		headPool.Put(s.pool)
		s.pool, s.head = nil, nil
	}
}

// headPool recycles the head buffers (Read runs thousands of times).
var headPool = sync.Pool{New: func() any { b := make([]byte, headRead); return &b }}

func newSource(r io.ReaderAt, size int64) (*source, error) {
	s := &source{r: r, size: size}
	n := min(size, headRead)
	s.pool = headPool.Get().(*[]byte)
	s.head = (*s.pool)[:n]
	m, err := r.ReadAt(s.head, 0)
	s.n += int64(m)
	if err != nil && err != io.EOF {
		return s, err
	}
	s.head = s.head[:m]
	if int64(m) < n { // file shrank under us
		s.size = int64(m)
	}
	return s, nil
}

// has reports whether [off, off+n) lies inside the file.
func (s *source) has(off, n int64) bool {
	return off >= 0 && n >= 0 && off <= s.size && n <= s.size-off
}

// bytes returns file[off:off+n]. The slice must not be modified; it may
// alias the source's cache. n is bounded by the caller (it never exceeds
// MaxRead, so no allocation follows a count from the file unchecked).
func (s *source) bytes(off, n int64) ([]byte, error) {
	if !s.has(off, n) {
		return nil, errRange
	}
	if n > MaxRead {
		return nil, errBudget
	}
	if off+n <= int64(len(s.head)) {
		return s.head[off : off+n], nil
	}
	first, last := off/pageSize, (off+n-1)/pageSize
	if n == 0 {
		return nil, nil
	}
	if first == last {
		p, err := s.page(first)
		if err != nil {
			return nil, err
		}
		lo := off - first*pageSize
		if lo+n > int64(len(p)) {
			return nil, errRange
		}
		return p[lo : lo+n], nil
	}
	out := make([]byte, 0, n)
	for i := first; i <= last; i++ {
		p, err := s.page(i)
		if err != nil {
			return nil, err
		}
		lo, hi := int64(0), int64(len(p))
		if i == first {
			lo = off - i*pageSize
		}
		if i == last {
			hi = off + n - i*pageSize
		}
		if lo > hi || hi > int64(len(p)) {
			return nil, errRange
		}
		out = append(out, p[lo:hi]...)
	}
	return out, nil
}

// page returns page i, served from head when it lies there.
func (s *source) page(i int64) ([]byte, error) {
	start := i * pageSize
	end := min(start+pageSize, s.size)
	if end <= int64(len(s.head)) {
		return s.head[start:end], nil
	}
	if p, ok := s.pages[i]; ok {
		return p, nil
	}
	if s.ioErr != nil {
		return nil, s.ioErr
	}
	if s.n+(end-start) > MaxRead {
		return nil, errBudget
	}
	p := make([]byte, end-start)
	m, err := s.r.ReadAt(p, start)
	s.n += int64(m)
	if err != nil && err != io.EOF {
		s.ioErr = err
		return nil, err
	}
	if int64(m) < end-start {
		return nil, errRange
	}
	if s.pages == nil {
		s.pages = make(map[int64][]byte)
	}
	s.pages[i] = p
	return p, nil
}
