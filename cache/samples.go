package cache

import (
	"encoding/binary"
	"unsafe"
)

// unit is 1/65535 as a float32, the factor LibRaw's copy of its 16-bit
// image into float uses (rb_copy_image: (float)v * (1.0f/65535.0f)), so
// that a sample read back is bit for bit the float32 LibRaw gave.
const unit = float32(1.0 / 65535.0)

// sampleValue maps each stored 16-bit value v to float32(v)·unit.
var sampleValue = func() *[65536]float32 {
	var t [65536]float32
	for v := range t {
		t[v] = float32(v) * unit
	}
	return &t
}()

// quantise returns the 16-bit value stored for x: round(x·65535) with x
// clamped to [0, 1] and NaN taken as 0. For x = float32(k)·unit it is k.
func quantise(x float32) uint16 {
	v := float64(x)*65535 + 0.5
	switch {
	case !(v >= 1): // below 0.5/65535, or NaN
		return 0
	case v >= 65535:
		return 65535
	}
	return uint16(v)
}

// encodeSamples writes src as little-endian 16-bit values into dst
// (len(dst) ≥ 2·len(src)) and returns the bytes written.
func encodeSamples(dst []byte, src []float32) []byte {
	dst = dst[:2*len(src)]
	for i, x := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], quantise(x))
	}
	return dst
}

// decodeSamples converts the little-endian 16-bit values in src
// (len(src) = 2·len(dst)) to float32 samples in dst.
func decodeSamples(dst []float32, src []byte) {
	t := sampleValue
	for i := range dst {
		dst[i] = t[binary.LittleEndian.Uint16(src[2*i:])]
	}
}

// hostLE: the host stores a uint16's low byte first, as the entry files do.
var hostLE = func() bool {
	one := uint16(1)
	return *(*byte)(unsafe.Pointer(&one)) == 1
}()

// sampleBytesOf is b's memory as bytes (2 a sample, in the host's order).
func sampleBytesOf(b []uint16) []byte {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), 2*len(b))
}

// toLE swaps the bytes of every sample of b on a big-endian host (so that
// the memory holds them little-endian, or back); a no-op on a
// little-endian one.
func toLE(b []uint16) {
	if hostLE {
		return
	}
	for i, v := range b {
		b[i] = v>>8 | v<<8
	}
}
