// Package rgb8 moves eight interleaved RGB pixels (24 float32: R, G, B of
// each pixel in turn) to and from three vectors of one channel each,
// pixel i at lane i, with AVX2 (Go's simd/archsimd, in a build with
// GOEXPERIMENT=simd on amd64; without it the package is empty): the
// shuffles the develop's vector kernels share. Moves only: the values
// are unchanged.
package rgb8
