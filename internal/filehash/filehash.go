// Package filehash is the one content hash of rawbatch's files: XXH3-64 of
// a file's whole content, streamed, with the size and modification time of
// the same open file. The up-to-date records (state) and the
// stage cache key (pipeline) both use it.
package filehash

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/zeebo/xxh3"
)

const (
	hashPrefix      = "xxh3:"
	hashBufferBytes = 256 << 10
)

// ErrChanging is wrapped by File when the file's size or mtime changed
// while it was being read.
var ErrChanging = errors.New("file changed while being read")

// File returns "xxh3:<16 hex>", the XXH3-64 of path's whole content read
// in a streamed way (a fixed 256 KiB buffer, never the whole file), together
// with the size in bytes and the modification time (nanosecond precision) of
// the same open file. The file is fstat'ed before and after reading; if its
// size or mtime changed, or the bytes read differ from the size, the error
// wraps ErrChanging. Other errors are those of open, stat and read.
// afterRead, when set (tests), runs after the read, before the second
// fstat.
func File(path string, afterRead func(f *os.File)) (hash string, size int64, mtime time.Time, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, time.Time{}, fmt.Errorf("state: hash: %w", err)
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return "", 0, time.Time{}, fmt.Errorf("state: hash: %w", err)
	}
	if !before.Mode().IsRegular() {
		return "", 0, time.Time{}, fmt.Errorf("state: hash: %s is not a regular file", path)
	}
	h := xxh3.New()
	// A small file is read through a buffer of its size (and one byte
	// more, for the end), not a fresh hashBufferBytes: the records hash
	// each input and output of a batch of small files.
	buf := make([]byte, min(hashBufferBytes, max(before.Size()+1, 512)))
	var n int64
	for {
		k, rerr := f.Read(buf)
		if k > 0 {
			h.Write(buf[:k])
			n += int64(k)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return "", 0, time.Time{}, fmt.Errorf("state: hash %s: %w", path, rerr)
		}
	}
	if afterRead != nil {
		afterRead(f)
	}
	after, err := f.Stat()
	if err != nil {
		return "", 0, time.Time{}, fmt.Errorf("state: hash: %w", err)
	}
	if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) || n != before.Size() {
		return "", 0, time.Time{}, fmt.Errorf("state: hash %s: %w (size %d→%d, read %d bytes, mtime %s→%s)",
			path, ErrChanging, before.Size(), after.Size(), n,
			before.ModTime().Format(time.RFC3339Nano), after.ModTime().Format(time.RFC3339Nano))
	}
	return Format(h.Sum64()), n, before.ModTime(), nil
}

// Format writes an XXH3-64 value as rawbatch's records store it:
// "xxh3:<16 hex>".
func Format(v uint64) string {
	return fmt.Sprintf("%s%016x", hashPrefix, v)
}

// Strings returns "xxh3:<16 hex>", the XXH3-64 of parts joined
// unambiguously: each part is preceded by its length in bytes (8-byte
// little endian), so ("ab","c") and ("a","bc") differ, as do () and ("").
// It is the hash of the settings an output was developed with (the
// records' settings_hash). It cannot fail.
func Strings(parts ...string) string {
	var b bytes.Buffer
	var n [8]byte
	for _, p := range parts {
		binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
		b.Write(n[:])
		b.WriteString(p)
	}
	return Format(xxh3.Hash(b.Bytes()))
}
