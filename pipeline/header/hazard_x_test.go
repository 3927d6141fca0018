//go:build hazard

package header

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/rwcarlsen/goexif/exif"
)

func TestHazardCycle(t *testing.T) {
	le := binary.LittleEndian
	b := make([]byte, 64)
	copy(b, "II*\x00")
	le.PutUint32(b[4:], 8)
	// IFD0 at 8: 1 entry, next -> 26 ; IFD1 at 26: 1 entry, next -> 8
	le.PutUint16(b[8:], 1)
	le.PutUint16(b[10:], 0x0112); le.PutUint16(b[12:], 3); le.PutUint32(b[14:], 1); le.PutUint32(b[18:], 1)
	le.PutUint32(b[22:], 26)
	le.PutUint16(b[26:], 1)
	le.PutUint16(b[28:], 0x0112); le.PutUint16(b[30:], 3); le.PutUint32(b[32:], 1); le.PutUint32(b[36:], 1)
	le.PutUint32(b[40:], 8)
	done := make(chan bool)
	go func() { exif.Decode(bytes.NewReader(b)); close(done) }()
	select {
	case <-done:
		fmt.Println("cycle: goexif returned")
	case <-time.After(2 * time.Second):
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		fmt.Printf("cycle: goexif still running after 2 s, heap %d MB\n", m.HeapAlloc>>20)
		os.Exit(0)
	}
}

func TestHazardOverflow(t *testing.T) {
	le := binary.LittleEndian
	b := make([]byte, 64)
	copy(b, "II*\x00")
	le.PutUint32(b[4:], 8)
	le.PutUint16(b[8:], 1)
	// LONG count 0x40000001: 4*count wraps to 4 -> inline, then make([]int64, 0x40000001) = 8 GB
	le.PutUint16(b[10:], 0x0111); le.PutUint16(b[12:], 4); le.PutUint32(b[14:], 0x40000001); le.PutUint32(b[18:], 1)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	func() {
		defer func() { fmt.Println("overflow: recovered:", recover()) }()
		exif.Decode(bytes.NewReader(b))
	}()
	runtime.ReadMemStats(&m1)
	fmt.Printf("overflow: goexif allocated %d MB\n", (m1.TotalAlloc-m0.TotalAlloc)>>20)
}
