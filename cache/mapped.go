package cache

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"
)

// MapSamples is [Cache.GetSamples] with the entry's file mapped read-only
// (mmap, shared) instead of read: the bands are views of the mapping, so
// an entry on tmpfs (the default directory) takes no memory beyond the
// page cache that holds it, and nothing is copied or zeroed; its checks,
// errors and marking the entry used are GetSamples', the checksums
// computed over the mapped bands in parallel, one per CPU. Samples.Meta is
// a copy. The bands must not be written, nor read once release (safe to
// call more than once, and from any goroutine) has unmapped them. The
// file's name may be replaced, evicted or deleted meanwhile (the mapping
// keeps the file); an entry file truncated in place while mapped, which
// no user of this package does, would fault its reader. On a big-endian
// host it reads the entry as GetSamples does (release then does nothing).
func (c *Cache) MapSamples(key string) (m *Samples, release func(), err error) {
	if !hostLE {
		m, err := c.GetSamples(key)
		return m, func() {}, err
	}
	var data []byte
	err = c.get(key, func(f *os.File, hd header) (string, error) {
		size := headerSize + hd.n
		if hd.metaLen >= 0 {
			size += hd.metaLen + 8
		}
		if int64(int(size)) != size {
			return "", fmt.Errorf("entry of %d bytes too large to map", size)
		}
		var err error
		data, err = unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED|mapPopulate)
		if err != nil {
			data = nil
			return "", err
		}
		nb := bandCount(hd.h, hd.band)
		bandBytes := int64(hd.band) * int64(hd.w) * int64(hd.ch) * sampleBytes
		bands := make([][]uint16, nb)
		sums := make([]uint64, nb)
		var wg sync.WaitGroup
		next := make(chan int, nb)
		for k := range nb {
			next <- k
		}
		close(next)
		for range min(nb, workers(false)) {
			wg.Go(func() {
				for k := range next {
					off := headerSize + int64(k)*bandBytes
					n := min(bandBytes, headerSize+hd.n-off)
					b := data[off : off+n : off+n]
					sums[k] = xxh3.Hash(b)
					bands[k] = unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), n/sampleBytes)
				}
			})
		}
		wg.Wait()
		var trailer, meta []byte
		if hd.metaLen >= 0 {
			trailer = data[headerSize+hd.n : size]
			if hd.metaLen > 0 {
				meta = append([]byte(nil), trailer[:hd.metaLen]...)
			}
		}
		if sum := payloadSum(sums, trailer); sum != hd.sum {
			return fmt.Sprintf("payload checksum %016x, header says %016x", sum, hd.sum), nil
		}
		m = &Samples{W: hd.w, H: hd.h, C: hd.ch, Band: hd.band, Bands: bands, Meta: meta}
		return "", nil
	})
	if err != nil {
		if data != nil {
			unix.Munmap(data)
		}
		if errors.Is(err, ErrMiss) {
			return nil, nil, ErrMiss
		}
		return nil, nil, err
	}
	var once sync.Once
	return m, func() { once.Do(func() { unix.Munmap(data) }) }, nil
}
