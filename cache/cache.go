// Package cache keeps decoded, demosaiced, linear images on disk — by
// default on tmpfs (/dev/shm), i.e. in memory — so that several output
// variants of one RAW file, and a later run that adds a variant, never decode
// the file twice. Images go in and come out as float32 samples in [0, 1]
// ([Cache.Put], [Cache.Get]); they are stored as 16-bit samples, which is
// lossless for images that came from 16-bit data (k/65535, as LibRaw's
// are) and rounds any other value by less than 1/131070. Images already
// held as 16-bit codes in bands of rows go in and come out as they are
// ([Cache.PutSamples], [Cache.PutFunc], [Cache.GetSamples],
// [Cache.MapSamples]), written, read and checksummed a band at a time in
// parallel.
//
// # Layout
//
// The cache is one flat directory holding a CACHEDIR.TAG, entries named
// "<key>.rbc" (key: 64 lowercase hex digits, see [Key]) and, while a Put is in
// progress, temporary files named ".rbtmp-*". Any other file is ignored.
//
// An entry file is a 96-byte header followed by the payload, the image's
// samples as little-endian uint16, interleaved (W×H×C, row-major, C
// samples per pixel), in bands of B rows (the last band has the rest):
// the bands are the units the payload is written, read and checksummed in,
// in parallel. The samples are opaque codes to this package except
// through [Cache.Put] and [Cache.Get], which store each float32 sample x
// as round(x·65535) clamped to [0, 1] (NaN stored as 0) and read back
// float32(v)·(1/65535) (float32 arithmetic, as LibRaw's copy into float
// computes it); [Cache.PutSamples] and [Cache.GetSamples] store and return
// the codes as they are:
//
//	offset size field
//	     0    8 magic "RBCACHE1"
//	     8    4 format version (uint32, = FormatVersion)
//	    12    4 flags (uint32; bit 1: a metadata trailer follows the
//	              payload; every other bit 0)
//	    16    8 width W in pixels (uint64)
//	    24    8 height H in pixels (uint64)
//	    32    4 channels C (uint32)
//	    36    4 rows B of each band (uint32, 1..H)
//	    40    8 payload length in bytes (uint64, = W·H·C·2)
//	    48    8 payload checksum: XXH3-64 of the bands' digests (XXH3-64
//	              of each band's bytes, as uint64 little-endian, in order),
//	              followed by the trailer's digest when there is one
//	    56   32 the entry's key (the 32 bytes its 64 hex digits spell)
//	    88    8 XXH3-64 of header bytes 0..87
//
// Header integers are little-endian. The file's size must be exactly
// 96 + payload length, or, with flag bit 1, 96 + payload length + M + 8:
// the caller's metadata (M bytes, at most [MaxMetaBytes], opaque to this
// package, see [Cache.PutMeta]) then its length M (uint64, little-endian)
// end the file. The payload checksum covers the payload and the trailer. The key in the header ties the file to its name: an
// entry file copied or renamed over another key's name fails [Cache.Get]'s
// check and is treated as corrupt, never served as the other key's image.
// An entry of another format version is never read as this one: its key
// differs (Key mixes in FormatVersion), and under this version's name it
// fails the version check as corrupt.
//
// Only regular files are entries: [Cache.Get] never opens (and so never
// blocks on) a named pipe, socket or device left under an entry's name.
//
// # Concurrency and crash safety
//
// Several goroutines and several processes may use one directory at once.
// Put writes a temporary file and renames it over "<key>.rbc", so a reader
// sees either the old complete file, the new complete file or no file, and
// concurrent Puts of one key are safe (the last rename wins). [Cache.Get]
// reads the entry through one open descriptor into memory of the caller's,
// so a file meanwhile replaced, evicted, deleted or cleared (which only
// unlink the name) is read whole or not at all; nothing stays mapped.
// [Cache.MapSamples] maps the file instead (read-only, shared): the
// mapping keeps the file it opened whatever becomes of its name, until
// the caller releases it; entry files are never truncated in place (Put
// renames a new file over the name), which would fault a mapping's
// reader.
//
// Put does not fsync: the cache holds nothing that cannot be recomputed, on
// tmpfs fsync does nothing anyway, and on a disk-backed directory a file torn
// by a power loss fails the checksums and is treated as corrupt (deleted,
// ErrCorrupt, the caller decodes again).
//
// The package is written for Linux and other Unix systems (statfs, futimes).
package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"
)

// FormatVersion is the version of the entry file format and of the key
// derivation. [Key] mixes it into every key, so bumping it makes every old
// entry unreachable (old entries then age out through eviction or Clear).
// Version 2 added the key to the header; version 3 stores 16-bit samples
// (2 bytes each) instead of float32 (4 bytes); version 4 stores them in
// bands checksummed one by one (the header's band rows, the payload
// checksum a checksum of the bands').
const FormatVersion = 4

const (
	magic      = "RBCACHE1"
	headerSize = 96
	keyOff     = 56 // the key's 32 bytes
	hdrSumOff  = 88 // XXH3-64 of bytes 0..87
	entryExt   = ".rbc"
	tmpPrefix  = ".rbtmp-"
	tagName    = "CACHEDIR.TAG"
	keyLen     = 64 // hex digits of a SHA-256

	// TagSignature is the first line of a CACHEDIR.TAG file
	// (https://bford.info/cachedir/), without its newline.
	TagSignature = "Signature: 8a477f597d28d172789f06886806bc55"

	tagContent = TagSignature + "\n" +
		"# This file is a cache directory tag created by rawbatch (decoded RAW images).\n" +
		"# For information about cache directory tags, see https://bford.info/cachedir/\n"

	// staleTmpAge is how old (by mtime) a temporary file must be before Open
	// treats it as left behind by a killed process and removes it. A Put in
	// progress keeps its file's mtime fresh with every write.
	staleTmpAge = time.Minute

	flagMeta = 2 // a metadata trailer follows the payload

	// sampleBytes is the size in bytes of one stored sample (uint16).
	sampleBytes = 2
	// chunkBytes is the size of each buffer Put and Get convert samples
	// through, maxChunks the most buffers they use at once (one for each
	// CPU, converting in parallel): the only memory they take beside the
	// caller's image, at most 1 MiB.
	chunkBytes = 256 << 10
	maxChunks  = 4
)

var (
	// ErrMiss is returned by Get when the cache holds no entry for the key.
	ErrMiss = errors.New("cache: miss")
	// ErrCorrupt is returned (wrapped; test with errors.Is) by Get when the
	// entry's file is truncated, extended, has a bad header, another format
	// version (an older float32 entry) or unknown flags, another key in its header (an entry copied or
	// renamed over this one) or a payload that fails its checksum, or is not
	// a regular file at all. Get deletes such a file before returning (a
	// directory excepted); the caller decodes again.
	ErrCorrupt = errors.New("cache: corrupt entry")
	// ErrTooLarge is returned (wrapped) by Put when the entry alone
	// ([EntryBytes]: 96 + W·H·C·2 bytes) exceeds the cache's cap; nothing is written or evicted.
	ErrTooLarge = errors.New("cache: entry larger than the cache cap")
	// ErrBadKey is returned (wrapped) when a key is not 64 lowercase hex
	// digits, the form [Key] returns.
	ErrBadKey = errors.New("cache: malformed key")
	// ErrNotCache is returned (wrapped) by [OpenExisting] for an existing
	// directory without a CACHEDIR.TAG, and by [Open] for one that also
	// holds files other than cache entries: it does not look like a cache,
	// and making it one would hide its files from backup tools.
	ErrNotCache = errors.New("does not look like a rawbatch cache")
)

// Cache is a directory of cached images. It is safe for concurrent use by
// several goroutines, and several processes may open the same directory.
type Cache struct {
	dir string
	max int64
}

// DefaultDir returns the default cache directory: /dev/shm/rawbatch-<uid>
// when /dev/shm exists and is a directory (tmpfs: entries live in memory),
// else <os.TempDir()>/rawbatch-cache-<uid>. It creates nothing.
func DefaultDir() string {
	uid := strconv.Itoa(os.Getuid())
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm/rawbatch-" + uid
	}
	return filepath.Join(os.TempDir(), "rawbatch-cache-"+uid)
}

// DefaultMaxBytes returns 25% of the total size, in bytes, of the filesystem
// holding dir (statfs). If dir does not exist yet, its nearest existing
// ancestor is asked. It returns an error only if statfs fails for every
// ancestor.
func DefaultMaxBytes(dir string) (int64, error) {
	size, _, err := statfsUp(dir)
	if err != nil {
		return 0, err
	}
	return size / 4, nil
}

// statfsUp returns the total and available bytes of the filesystem holding
// path or, if path does not exist, its nearest existing ancestor.
func statfsUp(path string) (size, avail int64, err error) {
	p, err := filepath.Abs(path)
	if err != nil {
		return 0, 0, fmt.Errorf("cache: statfs %s: %w", path, err)
	}
	for {
		var st unix.Statfs_t
		err := unix.Statfs(p, &st)
		if err == nil {
			bs := int64(st.Bsize)
			return satMul(int64(st.Blocks), bs), satMul(int64(st.Bavail), bs), nil
		}
		parent := filepath.Dir(p)
		if err != unix.ENOENT || parent == p {
			return 0, 0, fmt.Errorf("cache: statfs %s: %w", p, err)
		}
		p = parent
	}
}

func satMul(a, b int64) int64 {
	if a < 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// Open opens the cache directory dir for reading and writing entries,
// creating it (and missing parents) with mode 0700 if absent, and writes a
// CACHEDIR.TAG into it if absent. maxBytes caps the total size in bytes of
// all entry files (headers included); 0 means no cap, negative is an error.
// Open also removes temporary files older than a minute, left behind by
// killed processes.
//
// An existing directory without a CACHEDIR.TAG is made a cache only if it
// holds nothing but entries and temporary files of this package (an empty
// directory, say); otherwise Open returns an error wrapping ErrNotCache and
// writes nothing, so that a mistyped directory (a photo folder) is never
// tagged, which would make backup tools skip it.
//
// Because the default location /dev/shm is writable by every user, Open
// refuses a directory (after following symlinks) that is not owned by the
// current user or is writable by group or others.
func Open(dir string, maxBytes int64) (*Cache, error) {
	if err := checkArgs(dir, maxBytes); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	// Mkdir, not MkdirAll, on dir itself: MkdirAll accepts a symbolic link
	// to a directory there (openDir refuses it).
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("cache: %w", err)
	}
	c, err := openDir(dir, maxBytes)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(filepath.Join(dir, tagName)); err != nil {
		if err := c.checkOnlyCacheFiles(); err != nil {
			return nil, err
		}
		if err := c.writeTag(); err != nil {
			return nil, err
		}
	}
	c.removeStaleTemps()
	return c, nil
}

// OpenExisting opens the existing cache directory dir without creating or
// changing anything: no directory, no CACHEDIR.TAG, no removal of
// temporary files. It is for tools that only look at a cache or clear it
// ([Cache.Stats], [Cache.Clear]); maxBytes is as for [Open].
//
// Errors: one wrapping fs.ErrNotExist when dir does not exist; one
// wrapping ErrNotCache when dir is a directory whose CACHEDIR.TAG is
// missing or does not start with TagSignature; those of Open for a
// directory owned by another user or writable by group or others, or a
// path that is not a directory; other I/O errors.
func OpenExisting(dir string, maxBytes int64) (*Cache, error) {
	if err := checkArgs(dir, maxBytes); err != nil {
		return nil, err
	}
	c, err := openDir(dir, maxBytes)
	if err != nil {
		return nil, err
	}
	if err := c.checkTag(); err != nil {
		return nil, err
	}
	return c, nil
}

func checkArgs(dir string, maxBytes int64) error {
	if maxBytes < 0 {
		return fmt.Errorf("cache: negative cap %d", maxBytes)
	}
	if dir == "" {
		return errors.New("cache: empty directory name")
	}
	return nil
}

// openDir checks that dir is a directory of the current user that group
// and others cannot write to, and returns a Cache for it. dir itself must
// not be a symbolic link: the checks are on dir, not on what a link
// points to (the default /dev/shm/rawbatch-UID is in a directory everyone
// may write to, so another user could plant a link there to a directory
// of ours, and the cache would fill it and remove its stale-looking files).
func openDir(dir string, maxBytes int64) (*Cache, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("cache: %s is a symbolic link; refusing to follow it (it may have been planted by another user): remove it, or give the directory it points to as the cache directory", dir)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("cache: %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return nil, fmt.Errorf("cache: %s is owned by uid %d, not by the current user (uid %d)", dir, st.Uid, os.Getuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("cache: %s is writable by group or others (mode %v)", dir, fi.Mode().Perm())
	}
	return &Cache{dir: dir, max: maxBytes}, nil
}

// checkTag returns nil if the directory's CACHEDIR.TAG is a regular file
// starting with TagSignature, else an error wrapping ErrNotCache (or an
// I/O error). It never blocks on a special file named CACHEDIR.TAG.
func (c *Cache) checkTag() error {
	p := filepath.Join(c.dir, tagName)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cache: %s %w: it has no %s", c.dir, ErrNotCache, tagName)
	}
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("cache: %s %w: its %s is not a regular file", c.dir, ErrNotCache, tagName)
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	defer f.Close()
	b := make([]byte, len(TagSignature))
	n, _ := io.ReadFull(f, b)
	if string(b[:n]) != TagSignature {
		return fmt.Errorf("cache: %s %w: its %s does not start with %q", c.dir, ErrNotCache, tagName, TagSignature)
	}
	return nil
}

// checkOnlyCacheFiles returns an error wrapping ErrNotCache if the
// directory holds anything but entries and temporary files.
func (c *Cache) checkOnlyCacheFiles() error {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	for _, de := range des {
		// A tag may appear meanwhile: another process's Open wrote it.
		if n := de.Name(); !isEntryName(n) && !strings.HasPrefix(n, tmpPrefix) && n != tagName {
			return fmt.Errorf("cache: %s %w: it has no %s and holds other files (such as %q); use a new or empty directory",
				c.dir, ErrNotCache, tagName, n)
		}
	}
	return nil
}

// writeTag writes CACHEDIR.TAG if absent, atomically (temp file + rename),
// so a concurrent Open never sees a partial tag. Its temp-and-rename (and
// Put's) is not internal/atomicfile: cache imports nothing of
// rawbatch, and it skips the fsyncs on purpose (the cache is a
// discardable copy, usually on tmpfs).
func (c *Cache) writeTag() error {
	p := filepath.Join(c.dir, tagName)
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	f, err := os.CreateTemp(c.dir, tmpPrefix+"tag-*")
	if err != nil {
		return fmt.Errorf("cache: writing %s: %w", tagName, err)
	}
	tmp := f.Name()
	_, err = f.WriteString(tagContent)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cache: writing %s: %w", tagName, err)
	}
	return nil
}

func (c *Cache) removeStaleTemps() {
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	cutoff := time.Now().Add(-staleTmpAge)
	for _, de := range ents {
		if !strings.HasPrefix(de.Name(), tmpPrefix) || !de.Type().IsRegular() {
			continue
		}
		if fi, err := de.Info(); err == nil && fi.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(c.dir, de.Name()))
		}
	}
}

// Dir returns the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// MaxBytes returns the cap on the total size of entries in bytes (0: none).
func (c *Cache) MaxBytes() int64 { return c.max }

// Key derives an entry key from its parts — the caller passes e.g. the input
// content hash, the decode settings (demosaic, white balance, highlight mode,
// half size) and the LibRaw version. It returns 64 lowercase hex digits: the
// SHA-256 of a domain string, FormatVersion and every part, each part
// length-prefixed, so ("ab","c"), ("a","bc") and ("abc") give different keys.
func Key(parts ...string) string {
	return keyVersion(FormatVersion, parts...)
}

func keyVersion(version uint64, parts ...string) string {
	h := sha256.New()
	var buf [binary.MaxVarintLen64]byte
	h.Write([]byte("rawbatch/cache key\x00"))
	h.Write(buf[:binary.PutUvarint(buf[:], version)])
	h.Write(buf[:binary.PutUvarint(buf[:], uint64(len(parts)))])
	for _, p := range parts {
		h.Write(buf[:binary.PutUvarint(buf[:], uint64(len(p)))])
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func checkKey(key string) error {
	if len(key) != keyLen {
		return fmt.Errorf("%w: %q", ErrBadKey, key)
	}
	for i := 0; i < len(key); i++ {
		if b := key[i]; !('0' <= b && b <= '9' || 'a' <= b && b <= 'f') {
			return fmt.Errorf("%w: %q", ErrBadKey, key)
		}
	}
	return nil
}

func isEntryName(name string) bool {
	return strings.HasSuffix(name, entryExt) && checkKey(strings.TrimSuffix(name, entryExt)) == nil
}

func (c *Cache) path(key string) string {
	return filepath.Join(c.dir, key+entryExt)
}

// payloadBytes returns W·H·C·2, the stored samples' size in bytes, or an
// error if a dimension is not positive or the product overflows.
func payloadBytes(w, h, ch int) (int64, error) {
	if w <= 0 || h <= 0 || ch <= 0 {
		return 0, fmt.Errorf("cache: bad dimensions %d×%d×%d", w, h, ch)
	}
	n := uint64(sampleBytes)
	for _, d := range []int{w, h, ch} {
		if n > uint64(math.MaxInt64-headerSize)/uint64(d) {
			return 0, fmt.Errorf("cache: dimensions %d×%d×%d too large", w, h, ch)
		}
		n *= uint64(d)
	}
	// Get holds the image as float32: twice the payload must fit an int.
	if n > uint64(math.MaxInt/2) {
		return 0, fmt.Errorf("cache: dimensions %d×%d×%d too large", w, h, ch)
	}
	return int64(n), nil
}

// EntryBytes returns the size in bytes of the entry file [Cache.Put]
// writes for a w×h image of ch channels: the 96-byte header and 2 bytes a
// sample (metadata from [Cache.PutMeta] adds its length + 8). It is what
// the entry counts against the cache's cap. It returns 0 for dimensions
// Put refuses (not positive, or too large).
func EntryBytes(w, h, ch int) int64 {
	n, err := payloadBytes(w, h, ch)
	if err != nil {
		return 0
	}
	return headerSize + n
}

// keyBytes returns the 32 bytes a well-formed key (checkKey) spells.
func keyBytes(key string) []byte {
	b, _ := hex.DecodeString(key)
	return b
}

func encodeHeader(key string, hd header, meta bool) []byte {
	b := make([]byte, headerSize)
	copy(b, magic)
	le := binary.LittleEndian
	le.PutUint32(b[8:], FormatVersion)
	var flags uint32
	if meta {
		flags |= flagMeta
	}
	le.PutUint32(b[12:], flags)
	le.PutUint64(b[16:], uint64(hd.w))
	le.PutUint64(b[24:], uint64(hd.h))
	le.PutUint32(b[32:], uint32(hd.ch))
	le.PutUint32(b[36:], uint32(hd.band))
	le.PutUint64(b[40:], uint64(hd.n))
	le.PutUint64(b[48:], hd.sum)
	copy(b[keyOff:hdrSumOff], keyBytes(key))
	le.PutUint64(b[hdrSumOff:], xxh3.Hash(b[:hdrSumOff]))
	return b
}

type header struct {
	w, h, ch int
	band     int   // rows of each checksummed band but the last
	n        int64 // payload bytes
	sum      uint64
	metaLen  int64 // M, the metadata's bytes; -1 without a trailer
}

// parseHeader validates the header b (the first 96 bytes of key's entry
// file) against the file's size, and tail (the file's last 8 bytes, nil
// for a file shorter than 104 bytes), which holds the metadata's length
// when flag bit 1 is set. It does not check the payload checksum.
func parseHeader(b []byte, size int64, tail []byte, key string) (header, error) {
	hd := header{metaLen: -1}
	if len(b) < headerSize || size < headerSize {
		return hd, fmt.Errorf("truncated: %d bytes, header needs %d", size, headerSize)
	}
	if string(b[:8]) != magic {
		return hd, fmt.Errorf("bad magic %q", b[:8])
	}
	le := binary.LittleEndian
	// The version first: an older format's header checksum is elsewhere.
	if v := le.Uint32(b[8:]); v != FormatVersion {
		return hd, fmt.Errorf("format version %d, this program reads %d", v, FormatVersion)
	}
	if got, want := le.Uint64(b[hdrSumOff:]), xxh3.Hash(b[:hdrSumOff]); got != want {
		return hd, fmt.Errorf("header checksum %016x, want %016x", got, want)
	}
	if got := b[keyOff:hdrSumOff]; string(got) != string(keyBytes(key)) {
		return hd, fmt.Errorf("the entry of key %s is stored under this name (copied or renamed?)", hex.EncodeToString(got))
	}
	flags := le.Uint32(b[12:])
	if flags&^flagMeta != 0 {
		return hd, fmt.Errorf("flags %#x (unknown flag)", flags)
	}
	w, h, ch := le.Uint64(b[16:]), le.Uint64(b[24:]), uint64(le.Uint32(b[32:]))
	if w > math.MaxInt32 || h > math.MaxInt32 || ch > math.MaxInt32 {
		return hd, fmt.Errorf("bad dimensions %d×%d×%d", w, h, ch)
	}
	hd.w, hd.h, hd.ch = int(w), int(h), int(ch)
	if band := le.Uint32(b[36:]); band < 1 || uint64(band) > h {
		return hd, fmt.Errorf("bands of %d rows for %d rows", band, h)
	} else {
		hd.band = int(band)
	}
	n, err := payloadBytes(hd.w, hd.h, hd.ch)
	if err != nil {
		return hd, err
	}
	if pl := le.Uint64(b[40:]); pl != uint64(n) {
		return hd, fmt.Errorf("payload length %d, want %d for %d×%d×%d", pl, n, w, h, ch)
	}
	want := headerSize + n
	if flags&flagMeta != 0 {
		if size < headerSize+n+8 || len(tail) != 8 {
			return hd, fmt.Errorf("file is %d bytes, want at least %d with a metadata trailer", size, headerSize+n+8)
		}
		m := le.Uint64(tail)
		if m > MaxMetaBytes {
			return hd, fmt.Errorf("metadata trailer of %d bytes, at most %d", m, MaxMetaBytes)
		}
		want += int64(m) + 8
		hd.metaLen = int64(m)
	}
	if size != want {
		return hd, fmt.Errorf("file is %d bytes, want %d", size, want)
	}
	hd.n = n
	hd.sum = le.Uint64(b[48:])
	return hd, nil
}

// Put stores the image pix (w×h×ch float32 samples, interleaved, row-major;
// len(pix) must be w·h·ch, all dimensions positive) under key, replacing any
// entry of that key. Samples are stored as 16 bits (round(x·65535), x
// clamped to [0, 1], NaN as 0: see the package documentation), so the file
// takes [EntryBytes] = 96 + w·h·ch·2 bytes; its header records key.
//
// It first evicts least-recently-used entries so that the new entry fits
// under the cap, writes a temporary file in the directory (the payload
// converted through at most four buffers of about 256 KiB in parallel,
// the only memory Put takes, then the header with XXH3-64 checksums of
// header and payload), renames it to "<key>.rbc", and evicts again (other
// processes may have added entries meanwhile), never evicting the entry
// just written. It does not fsync (see the package documentation).
//
// Errors: ErrBadKey; a dimension/length mismatch; ErrTooLarge if the entry
// alone exceeds the cap; any I/O error (e.g. ENOSPC on a full tmpfs), in which
// case the temporary file is removed and the cache is left as it was, except
// for evictions. Put never leaves a partial entry under the key.
func (c *Cache) Put(key string, w, h, ch int, pix []float32) error {
	return c.PutMeta(key, w, h, ch, pix, nil)
}

// MaxMetaBytes is the largest metadata [Cache.PutMeta] stores with an entry.
const MaxMetaBytes = 64 << 10

// PutMeta is [Cache.Put] that also stores meta (at most [MaxMetaBytes]
// bytes, opaque to this package: for example what the caller chose while
// computing the image) with the entry; [Cache.Get] returns a copy of it as
// [Entry.Meta]. Empty meta stores none (the file is then exactly Put's). The
// file takes meta's length + 8 more bytes; the payload checksum covers it.
// Errors: Put's, and one for meta over MaxMetaBytes.
func (c *Cache) PutMeta(key string, w, h, ch int, pix []float32, meta []byte) error {
	n, err := payloadBytes(w, h, ch)
	if err != nil {
		return err
	}
	if int64(len(pix)) != n/sampleBytes {
		return fmt.Errorf("cache: %d samples for a %d×%d×%d image, want %d", len(pix), w, h, ch, n/sampleBytes)
	}
	rowLen := w * ch
	band := max(1, chunkBytes/sampleBytes/rowLen)
	return c.PutFunc(key, w, h, ch, band, func(k int, dst []uint16) {
		y0 := k * band
		src := pix[y0*rowLen : y0*rowLen+len(dst)]
		for i, x := range src {
			dst[i] = quantise(x)
		}
	}, meta)
}

// Samples is an image as 16-bit samples (opaque codes to this package) in
// bands of rows: W×H pixels of C interleaved samples, row-major; band k
// holds rows k·Band to min(H, (k+1)·Band)−1, so Bands[k] has exactly that
// many rows of W·C samples. Meta is the metadata stored with it
// ([Cache.PutMeta]; nil for none).
type Samples struct {
	W, H, C int
	Band    int
	Bands   [][]uint16
	Meta    []byte
}

// bandCount is the number of bands of band rows an h-row image has.
func bandCount(h, band int) int { return (h + band - 1) / band }

// PutSamples stores m under key as [Cache.PutFunc] does, writing its bands
// as they are (each band one write, no conversion; the checksums computed
// in parallel, one band per CPU), so that an entry the caller already holds
// as 16-bit bands costs no memory beyond them. The bands are read, never
// kept (on a big-endian host they are byte-swapped in place while written,
// then swapped back). Errors: PutFunc's, and one for bands of the wrong
// count or length.
func (c *Cache) PutSamples(key string, m Samples) error {
	if m.Band <= 0 || m.H <= 0 || len(m.Bands) != bandCount(m.H, m.Band) {
		return fmt.Errorf("cache: %d bands of %d rows for %d rows", len(m.Bands), m.Band, m.H)
	}
	for k, b := range m.Bands {
		if rows := min(m.Band, m.H-k*m.Band); len(b) != rows*m.W*m.C {
			return fmt.Errorf("cache: band %d has %d samples, want %d", k, len(b), rows*m.W*m.C)
		}
	}
	return c.put(key, m.W, m.H, m.C, m.Band, m.Meta, true, func(k int, _ []uint16) []uint16 { return m.Bands[k] })
}

// PutFunc stores a w×h image of ch 16-bit samples a pixel under key,
// replacing any entry of that key, from bands of band rows that fill
// writes: fill(k, dst) sets dst (rows k·band to min(h, (k+1)·band)−1, all
// their samples) and is called once for each band, from up to four
// goroutines at once (for different k), each band written once filled;
// the only memory PutFunc takes is those four bands. It writes a temporary
// file and renames it into place, evicting before and after as [Cache.Put]
// does, meta as [Cache.PutMeta] does. Errors: those of PutMeta, and one for
// band < 1.
func (c *Cache) PutFunc(key string, w, h, ch, band int, fill func(k int, dst []uint16), meta []byte) error {
	if band < 1 {
		return fmt.Errorf("cache: bands of %d rows", band)
	}
	return c.put(key, w, h, ch, band, meta, false, func(k int, buf []uint16) []uint16 {
		fill(k, buf)
		return buf
	})
}

// put writes key's entry: src(k, scratch) returns band k's samples
// (own: the caller's bands, scratch nil; else made in scratch, a buffer
// of the band's length).
func (c *Cache) put(key string, w, h, ch, band int, meta []byte, own bool, src func(k int, scratch []uint16) []uint16) error {
	if len(meta) > MaxMetaBytes {
		return fmt.Errorf("cache: %d bytes of metadata, at most %d", len(meta), MaxMetaBytes)
	}
	if err := checkKey(key); err != nil {
		return err
	}
	n, err := payloadBytes(w, h, ch)
	if err != nil {
		return err
	}
	if band > math.MaxUint32 || band < 1 {
		return fmt.Errorf("cache: bands of %d rows", band)
	}
	band = min(band, h)
	var trailer []byte
	if len(meta) > 0 {
		trailer = binary.LittleEndian.AppendUint64(append([]byte(nil), meta...), uint64(len(meta)))
	}
	size := headerSize + n + int64(len(trailer))
	if c.max > 0 {
		if size > c.max {
			return fmt.Errorf("%w: %d bytes, cap %d", ErrTooLarge, size, c.max)
		}
		// Make room first, so that the directory (memory, on tmpfs) never
		// holds much more than the cap. The old entry of this key, if any,
		// is about to be replaced and does not count.
		c.evict(c.max-size, key, false)
	}

	f, err := os.CreateTemp(c.dir, tmpPrefix+key[:16]+"-*")
	if err != nil {
		return fmt.Errorf("cache: put: %w", err)
	}
	tmp := f.Name()
	hd := header{w: w, h: h, ch: ch, band: band, n: n}
	err = writeEntry(f, key, hd, trailer, own, src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, c.path(key))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cache: put %s: %w", key, err)
	}
	if c.max > 0 {
		c.evict(c.max, key, true)
	}
	return nil
}

// workers is how many bands Put and Get handle at once: one for each CPU
// the Go runtime runs on, at most maxChunks when each needs a buffer.
func workers(buffered bool) int {
	n := max(1, runtime.GOMAXPROCS(0))
	if buffered {
		n = min(n, maxChunks)
	}
	return n
}

// writeEntry writes the entry file of hd to f: the bands src gives (in
// groups, each group's bands made and summed in parallel, then written in
// order at their offsets), the trailer, then the header (which needs the
// payload's checksum) at offset 0. With own (src returns the caller's
// bands) no buffer is made and a group has a band for each CPU.
func writeEntry(f *os.File, key string, hd header, trailer []byte, own bool, src func(k int, scratch []uint16) []uint16) error {
	nb := bandCount(hd.h, hd.band)
	rowLen := hd.w * hd.ch
	var scratch [][]uint16
	g := workers(!own)
	if !own {
		scratch = make([][]uint16, g)
		for i := range scratch {
			scratch[i] = make([]uint16, min(hd.band, hd.h)*rowLen)
		}
	}
	sums := make([]uint64, nb)
	off := int64(headerSize)
	for k0 := 0; k0 < nb; k0 += g {
		k1 := min(nb, k0+g)
		bands := make([][]uint16, k1-k0)
		var wg sync.WaitGroup
		for k := k0; k < k1; k++ {
			wg.Go(func() {
				var buf []uint16
				if !own {
					buf = scratch[k-k0][:min(hd.band, hd.h-k*hd.band)*rowLen]
				}
				b := src(k, buf)
				toLE(b)
				sums[k] = xxh3.Hash(sampleBytesOf(b))
				bands[k-k0] = b
			})
		}
		wg.Wait()
		for _, b := range bands {
			_, err := f.WriteAt(sampleBytesOf(b), off)
			if own {
				toLE(b) // back to the caller's order (a no-op on little-endian hosts)
			}
			if err != nil {
				return err
			}
			off += int64(len(b)) * sampleBytes
		}
	}
	if len(trailer) > 0 {
		if _, err := f.WriteAt(trailer, off); err != nil {
			return err
		}
	}
	hd.sum = payloadSum(sums, trailer)
	_, err := f.WriteAt(encodeHeader(key, hd, len(trailer) > 0), 0)
	return err
}

// payloadSum is the entry's payload checksum: XXH3-64 of the bands'
// digests (XXH3-64 of each band's bytes, little-endian) followed, when
// there is a trailer, by the trailer's digest.
func payloadSum(sums []uint64, trailer []byte) uint64 {
	b := make([]byte, 0, 8*(len(sums)+1))
	for _, s := range sums {
		b = binary.LittleEndian.AppendUint64(b, s)
	}
	if len(trailer) > 0 {
		b = binary.LittleEndian.AppendUint64(b, xxh3.Hash(trailer))
	}
	return xxh3.Hash(b)
}

type entryInfo struct {
	key   string
	size  int64
	mtime time.Time
}

// list returns the entries in the directory, skipping unrelated files and
// entries that vanish while listing.
func (c *Cache) list() ([]entryInfo, error) {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	out := make([]entryInfo, 0, len(des))
	for _, de := range des {
		name := de.Name()
		if !isEntryName(name) || !de.Type().IsRegular() {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, entryInfo{key: strings.TrimSuffix(name, entryExt), size: fi.Size(), mtime: fi.ModTime()})
	}
	return out, nil
}

// Trim removes least-recently-used entries until the cache holds at most
// its cap (MaxBytes), as Put does before writing. Convert calls it once at
// the start of a run, so a lowered --cache-size takes effect even in runs
// that only read the cache. Best effort: errors are ignored.
func (c *Cache) Trim() {
	if c.max > 0 {
		c.evict(c.max, "", false)
	}
}

// evict removes least-recently-used entries (oldest mtime first) until the
// total size of entries is at most limit. The entry keep is never removed;
// its size counts towards the total only if countKeep. Errors are ignored:
// eviction is best effort, and a concurrent process may remove the same files.
func (c *Cache) evict(limit int64, keep string, countKeep bool) {
	ents, err := c.list()
	if err != nil {
		return
	}
	var total int64
	victims := ents[:0]
	for _, e := range ents {
		if e.key == keep {
			if countKeep {
				total += e.size
			}
			continue
		}
		total += e.size
		victims = append(victims, e)
	}
	if total <= limit {
		return
	}
	sort.Slice(victims, func(i, j int) bool { return victims[i].mtime.Before(victims[j].mtime) })
	for _, e := range victims {
		if total <= limit {
			break
		}
		err := os.Remove(c.path(e.key))
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			total -= e.size
		}
	}
}

// Entry is a cached image read into memory of the caller's.
type Entry struct {
	// W, H and C are the width and height in pixels and the number of
	// channels (samples per pixel).
	W, H, C int
	// Pix holds the W·H·C linear float32 samples in [0, 1], interleaved,
	// row-major (sample c of pixel (x, y) is Pix[(y*W+x)*C+c]), converted
	// from the stored 16 bits. It is an ordinary slice of the caller's, to
	// read and write.
	Pix []float32
	// Meta is the metadata stored with the entry by [Cache.PutMeta]; nil
	// when there is none.
	Meta []byte
}

// Get returns the entry for key, read into memory: W·H·C·4 bytes for Pix
// (the image as float32) and at most four bands of the file's (about
// 256 KiB each for an entry [Cache.Put] wrote) it reads the file through,
// converted in parallel, one per CPU; nothing of the file stays open or
// mapped. Its checks, errors and marking the entry used are
// [Cache.GetSamples']; the samples read as float32 as the package
// documentation says.
func (c *Cache) Get(key string) (*Entry, error) {
	var e *Entry
	err := c.get(key, func(f *os.File, hd header) (string, error) {
		pix := make([]float32, hd.n/sampleBytes)
		rowLen := hd.w * hd.ch
		meta, reason, err := readEntry(f, hd, false, func(k int, b []uint16) {
			dst := pix[k*hd.band*rowLen:]
			t := sampleValue
			for i, v := range b {
				dst[i] = t[v]
			}
		})
		e = &Entry{W: hd.w, H: hd.h, C: hd.ch, Pix: pix, Meta: meta}
		return reason, err
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// GetSamples returns the entry for key as it is stored, in the file's
// bands (Samples.Band rows each, as the entry was written): each band is
// read straight into a buffer of its own (2 bytes a sample, the only
// memory it takes beside a few bytes a band) and checksummed, bands in
// parallel, one per CPU; nothing of the file stays open or mapped. It
// validates the header (magic, format version, header checksum, the key
// recorded in it against key, flags, dimensions against payload length
// and file size) before reading the payload, and the XXH3-64 checksums of
// payload and metadata on every call. It then sets the file's mtime to
// now, which is the "last used" time eviction goes by.
//
// Only a regular file is an entry. GetSamples never opens anything else
// found under the entry's name, and so never blocks on a named pipe; it
// never follows a symlink either.
//
// Errors: ErrMiss (unwrapped) if there is no entry; an error wrapping
// ErrCorrupt if the file is invalid — truncated or extended, another
// format version (a float32 entry of version 2), another key's entry
// stored under this name, a payload failing its checksum, and a named
// pipe, socket, device or symlink — in which case it has removed it
// (unless it was replaced by a new file meanwhile; a directory under the
// name is left in place); ErrBadKey; other I/O errors.
func (c *Cache) GetSamples(key string) (*Samples, error) {
	var m *Samples
	err := c.get(key, func(f *os.File, hd header) (string, error) {
		bands := make([][]uint16, bandCount(hd.h, hd.band))
		meta, reason, err := readEntry(f, hd, true, func(k int, b []uint16) { bands[k] = b })
		m = &Samples{W: hd.w, H: hd.h, C: hd.ch, Band: hd.band, Bands: bands, Meta: meta}
		return reason, err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// get opens key's entry file, checks its header and has read read the
// rest (a reason when the file is no valid entry), then marks it used.
func (c *Cache) get(key string, read func(f *os.File, hd header) (reason string, err error)) error {
	if err := checkKey(key); err != nil {
		return err
	}
	p := c.path(key)
	// Lstat before opening: opening a named pipe for reading would block
	// until a writer came, and opening a device can have side effects.
	lfi, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ErrMiss
		}
		return fmt.Errorf("cache: get: %w", err)
	}
	if !lfi.Mode().IsRegular() {
		return c.notRegular(key, lfi)
	}
	// Should the name be replaced between the Lstat and the open, the
	// open still neither blocks (O_NONBLOCK) nor follows a symlink
	// (O_NOFOLLOW), and the Stat of the descriptor sees what was opened.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ErrMiss
		}
		if lfi, lerr := os.Lstat(p); lerr == nil && !lfi.Mode().IsRegular() {
			return c.notRegular(key, lfi) // ELOOP (symlink), ENXIO (socket)
		}
		return fmt.Errorf("cache: get: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cache: get: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return c.notRegular(key, fi)
	}
	size := fi.Size()
	if size < headerSize {
		return c.corrupt(key, fi, fmt.Sprintf("truncated: %d bytes", size))
	}
	hdr := make([]byte, headerSize)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return fmt.Errorf("cache: get %s: %w", p, err)
	}
	var tail []byte
	if size >= headerSize+8 {
		tail = make([]byte, 8)
		if _, err := f.ReadAt(tail, size-8); err != nil {
			return fmt.Errorf("cache: get %s: %w", p, err)
		}
	}
	hd, err := parseHeader(hdr, size, tail, key)
	if err != nil {
		return c.corrupt(key, fi, err.Error())
	}
	reason, err := read(f, hd)
	if err != nil {
		return fmt.Errorf("cache: get %s: %w", p, err)
	}
	if reason != "" {
		return c.corrupt(key, fi, reason)
	}

	// Mark as used. By descriptor, so that a file renamed over ours
	// meanwhile is not the one touched; fall back to the path, not
	// following a symlink put there meanwhile.
	now := time.Now()
	tv := []unix.Timeval{unix.NsecToTimeval(now.UnixNano()), unix.NsecToTimeval(now.UnixNano())}
	if unix.Futimes(int(f.Fd()), tv) != nil {
		ts := []unix.Timespec{unix.NsecToTimespec(now.UnixNano()), unix.NsecToTimespec(now.UnixNano())}
		unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
	}
	return nil
}

// readEntry reads the payload and trailer of the entry file f, whose
// header hd was checked: each band read at its offset and summed, bands in
// groups read in parallel, and handed to got(k, samples) in the host's
// order (in any order of k). keep: each band in a buffer of its own, kept
// by got; else through at most maxChunks buffers reused once got returns.
// It returns the metadata; a file that is not a valid entry gives a reason
// (and a nil error), a failing read an error.
func readEntry(f *os.File, hd header, keep bool, got func(k int, b []uint16)) ([]byte, string, error) {
	nb := bandCount(hd.h, hd.band)
	rowLen := hd.w * hd.ch
	g := workers(!keep)
	var scratch [][]uint16
	if !keep {
		scratch = make([][]uint16, g)
		for i := range scratch {
			scratch[i] = make([]uint16, hd.band*rowLen)
		}
	}
	sums := make([]uint64, nb)
	errs := make([]error, g)
	for k0 := 0; k0 < nb; k0 += g {
		var wg sync.WaitGroup
		for k := k0; k < min(nb, k0+g); k++ {
			wg.Go(func() {
				n := min(hd.band, hd.h-k*hd.band) * rowLen
				var b []uint16
				if keep {
					b = make([]uint16, n)
				} else {
					b = scratch[k-k0][:n]
				}
				bb := sampleBytesOf(b)
				if _, err := f.ReadAt(bb, headerSize+int64(k)*int64(hd.band)*int64(rowLen)*sampleBytes); err != nil {
					errs[k-k0] = err
					return
				}
				sums[k] = xxh3.Hash(bb)
				toLE(b) // to the host's order (a no-op on little-endian hosts)
				got(k, b)
			})
		}
		wg.Wait()
		for _, err := range errs {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, "truncated while reading", nil
			}
			if err != nil {
				return nil, "", err
			}
		}
	}
	var meta, trailer []byte
	if hd.metaLen >= 0 {
		trailer = make([]byte, hd.metaLen+8)
		if _, err := f.ReadAt(trailer, headerSize+hd.n); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, "truncated while reading", nil
			}
			return nil, "", err
		}
		if hd.metaLen > 0 {
			meta = trailer[:hd.metaLen:hd.metaLen]
		}
	}
	if sum := payloadSum(sums, trailer); sum != hd.sum {
		return nil, fmt.Sprintf("payload checksum %016x, header says %016x", sum, hd.sum), nil
	}
	return meta, "", nil
}

// notRegular reports what is under key's name, described by fi, as a
// corrupt entry and removes it: unlinking a name inside the cache
// directory changes nothing elsewhere (a symlink's target stays). A
// directory is left in place, since it may hold someone's files.
func (c *Cache) notRegular(key string, fi fs.FileInfo) error {
	what := "not a regular file"
	switch m := fi.Mode(); {
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe, not an entry file"
	case m&fs.ModeSocket != 0:
		what = "a socket, not an entry file"
	case m&fs.ModeDevice != 0:
		what = "a device, not an entry file"
	case m&fs.ModeSymlink != 0:
		what = "a symlink, not an entry file"
	case m.IsDir():
		return fmt.Errorf("%w: %s: a directory, not an entry file (left in place)", ErrCorrupt, c.path(key))
	}
	return c.corrupt(key, fi, what)
}

// corrupt deletes the entry file of key if it is still the file described
// by fi, and returns the ErrCorrupt error to report.
func (c *Cache) corrupt(key string, fi fs.FileInfo, reason string) error {
	p := c.path(key)
	if cur, err := os.Lstat(p); err == nil && os.SameFile(cur, fi) {
		os.Remove(p)
	}
	return fmt.Errorf("%w: %s: %s", ErrCorrupt, p, reason)
}

// Delete removes the entry for key. Deleting an absent entry is not an
// error. Entries already returned by Get stay valid until closed.
func (c *Cache) Delete(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := os.Remove(c.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cache: delete: %w", err)
	}
	return nil
}

// Stats describes a cache directory. Sizes are in bytes.
type Stats struct {
	Dir      string
	Entries  int   // number of entry files
	Bytes    int64 // their total size, headers included
	MaxBytes int64 // the cap (0: none)
	FSSize   int64 // total size of the filesystem holding Dir (statfs)
	FSFree   int64 // bytes available to unprivileged users on it
}

// Stats counts the entries (files named "<key>.rbc"; temporary and unrelated
// files are ignored) and asks statfs about the filesystem.
func (c *Cache) Stats() (Stats, error) {
	s := Stats{Dir: c.dir, MaxBytes: c.max}
	ents, err := c.list()
	if err != nil {
		return s, err
	}
	for _, e := range ents {
		s.Entries++
		s.Bytes += e.size
	}
	s.FSSize, s.FSFree, err = statfsUp(c.dir)
	return s, err
}

// Clear removes every entry and returns how many it removed. It keeps the
// directory, CACHEDIR.TAG, unrelated files and temporary files of Puts in
// progress (it removes only those older than a minute). Entries already
// returned by Get stay valid until closed.
func (c *Cache) Clear() (removed int, err error) {
	ents, err := c.list()
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		rerr := os.Remove(c.path(e.key))
		switch {
		case rerr == nil:
			removed++
		case errors.Is(rerr, fs.ErrNotExist):
		default:
			if err == nil {
				err = fmt.Errorf("cache: clear: %w", rerr)
			}
		}
	}
	c.removeStaleTemps()
	return removed, err
}
