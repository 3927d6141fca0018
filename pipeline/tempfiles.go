package pipeline

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/rawbatch/rawbatch/pipeline/header"
	"golang.org/x/sys/unix"
)

// Temporary outputs and their owners. Every temporary output
// (TempPrefix + base name + "." + a token, tempToken) is locked with
// flock(2) by the process that writes it, from its creation until it is
// renamed into place or removed; the kernel drops the lock when that
// process exits or is killed. So a temporary file whose flock can be taken
// has no live owner: it was left by a killed run (kill -9, OOM, power loss)
// and can be removed, whatever output, variant or settings it was for,
// while one being written by an overlapping run is locked and kept. flock
// also works between NFS clients (Linux emulates it with byte-range locks).
// The token is rawbatch's mark: random hex digits and a check of them
// and of the name before it, which a file a user named alike (the same
// prefix, base name and an extension or number after it) does not carry,
// so the cleaners leave such a file alone whatever its content; and the
// file carries the token in an extended attribute (tempMarkAttr), which a
// copy made by another program under that name does not.

// tempLocks holds, per temporary file this process created, a second
// descriptor of it that keeps the flock after the writer closes its own
// (the rename into place comes after every variant is written).
var tempLocks struct {
	sync.Mutex
	m map[string]heldTemp
}

type heldTemp struct {
	fd  int
	ino uint64
}

// CreateTemp creates the temporary output file for the output at path, in
// path's directory, named TempPrefix + tempStem(path) + "." + a new token
// (tempToken), mode 0600, without following a symbolic link there. The file
// is flock-held by this process (see above) until it no longer names the
// created file (renamed or removed; checked at the next CreateTemp) or the
// process ends, so that CleanStaleTemps of another run keeps it.
func CreateTemp(path string) (*os.File, error) { return CreateTempIn(nil, path) }

// CreateTempIn is CreateTemp in dir, path's directory as opened by the
// caller (nil: by path): the file is made relative to it (openat), so it
// lands in that directory even if a symbolic link has since taken the
// directory's name.
func CreateTempIn(dir *os.File, path string) (*os.File, error) {
	releaseTempLocks()
	for range 16 {
		name := NewTempName(path)
		f, err := openTemp(dir, name)
		if os.IsExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			f.Close()
			removeIn(dir, f.Name())
			return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
		}
		markTemp(fd, name)
		if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
			// A cleaner may have taken the lock and removed the path
			// between the creation and the flock: then start over.
			var fst, pst unix.Stat_t
			if unix.Fstat(fd, &fst) == nil && lstatIn(dir, f.Name(), &pst) == nil && fst.Ino == pst.Ino && fst.Dev == pst.Dev {
				tempLocks.Lock()
				if tempLocks.m == nil {
					tempLocks.m = map[string]heldTemp{}
				}
				tempLocks.m[f.Name()] = heldTemp{fd: fd, ino: fst.Ino}
				tempLocks.Unlock()
				return f, nil
			}
		}
		// Taken by a cleaner, which removes it.
		unix.Close(fd)
		f.Close()
	}
	return nil, fmt.Errorf("creating a temporary file in %s: taken or removed by others 16 times in a row", filepath.Dir(path))
}

// openTemp creates the file name (mode 0600, O_EXCL, not through a
// symbolic link) in dir (nil: by its path).
func openTemp(dir *os.File, name string) (*os.File, error) {
	if dir == nil {
		return os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	}
	fd, err := unix.Openat(int(dir.Fd()), filepath.Base(name), unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// lstatIn is lstat of the file name in dir (nil: by its path).
func lstatIn(dir *os.File, name string, st *unix.Stat_t) error {
	if dir == nil {
		return unix.Lstat(name, st)
	}
	return unix.Fstatat(int(dir.Fd()), filepath.Base(name), st, unix.AT_SYMLINK_NOFOLLOW)
}

// removeIn removes the file name in dir (nil: by its path).
func removeIn(dir *os.File, name string) error {
	if dir == nil {
		return os.Remove(name)
	}
	if err := unix.Unlinkat(int(dir.Fd()), filepath.Base(name), 0); err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	return nil
}

// NewTempName returns a new name, in path's directory, for a temporary file
// of the output at path as CreateTemp names them (with a new random token).
func NewTempName(path string) string {
	prefix := TempPrefix + tempStem(path) + "."
	var rnd [tempRandomBytes]byte
	rand.Read(rnd[:]) // never fails (crypto/rand)
	return filepath.Join(filepath.Dir(path), prefix+tempToken(prefix, hex.EncodeToString(rnd[:])))
}

// tempRandomBytes random bytes (in hex) start a temporary name's token;
// tempCheckBytes bytes of a hash (in hex) end it.
const (
	tempRandomBytes = 8
	tempCheckBytes  = 4
	tempTokenLen    = 2 * (tempRandomBytes + tempCheckBytes)
)

// tempToken returns the token of a temporary name that starts with prefix
// (TempPrefix, the stem, "."): rnd (lower-case hex) then the first
// tempCheckBytes of the SHA-256 of a label, prefix and rnd, in hex. Only
// rawbatch computes such a check, so a file whose token verifies
// (validTempToken) was named by rawbatch, not by a user.
func tempToken(prefix, rnd string) string {
	h := sha256.New()
	h.Write([]byte("rawbatch temporary output\x00"))
	h.Write([]byte(prefix))
	h.Write([]byte(rnd))
	return rnd + hex.EncodeToString(h.Sum(nil)[:tempCheckBytes])
}

// tempMarkAttr is the extended attribute CreateTemp sets on a temporary
// output, holding its name's token: evidence besides the name that
// rawbatch created the file (a copy made with cp or a file saved under
// that name by another program does not carry it).
const tempMarkAttr = "user.rawbatch.temp"

// markTemp sets tempMarkAttr on the temporary file fd named name. A file
// system without user extended attributes refuses it; the name and the
// content are then the only marks.
func markTemp(fd int, name string) {
	unix.Fsetxattr(fd, tempMarkAttr, []byte(tempTokenOf(name)), 0)
}

// MarkTemp marks the file at path, named by NewTempName, as CreateTemp
// marks a temporary output (tests make killed runs' leftovers with it).
func MarkTemp(path string) {
	if fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		markTemp(fd, path)
		unix.Close(fd)
	}
}

// markedTemp reports whether the temporary-looking file fd at path of size
// bytes carries rawbatch's mark: tempMarkAttr holding its name's token, or
// no such attribute where the file system has none (ENOTSUP), or an empty
// file (a run killed between creating it and marking it).
func markedTemp(fd int, path string, size int64) bool {
	buf := make([]byte, 64)
	n, err := unix.Fgetxattr(fd, tempMarkAttr, buf)
	switch {
	case err == nil:
		return string(buf[:n]) == tempTokenOf(path)
	case errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EOPNOTSUPP):
		return true
	case errors.Is(err, unix.ENODATA):
		return size == 0
	}
	return false
}

// tempTokenOf returns the token at the end of a temporary file's name.
func tempTokenOf(name string) string {
	base := filepath.Base(name)
	return base[strings.LastIndexByte(base, '.')+1:]
}

// validTempToken reports whether token, following prefix in a name, is one
// tempToken made.
func validTempToken(prefix, token string) bool {
	return len(token) == tempTokenLen && isLowerHex(token) &&
		tempToken(prefix, token[:2*tempRandomBytes]) == token
}

// releaseTempLocks closes the lock descriptors of temporary files that have
// been renamed into place or removed.
func releaseTempLocks() {
	tempLocks.Lock()
	defer tempLocks.Unlock()
	for p, h := range tempLocks.m {
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || st.Ino != h.ino {
			unix.Close(h.fd)
			delete(tempLocks.m, p)
		}
	}
}

// isTempName reports whether name is a temporary output's name as
// CreateTemp makes it: TempPrefix, the stem (tempStem: the base name of an
// output or report, or its shortened form ending in "~" and 16 hex
// digits), then "." and a token that verifies (validTempToken). The base
// name must have an extension rawbatch writes (tempExts).
func isTempName(name string) bool {
	_, ok := tempKind(name)
	return ok
}

// tempExts are the extensions of the files rawbatch writes through
// temporary files, each with the format whose signature their content
// starts with, as pipeline/header's signature table names it (JPEG, TIFF,
// PNG, WEBP, AVIF, JXL: header.StartsAs), or jsonReport for the JSON reports.
var tempExts = map[string]string{
	".jpg": "JPEG", ".jpeg": "JPEG",
	".tif": "TIFF", ".tiff": "TIFF",
	".png":  "PNG",
	".webp": "WEBP",
	".avif": "AVIF",
	".jxl":  "JXL",
	".json": jsonReport,
}

// jsonReport stands in tempExts for a JSON report, which starts with "{".
const jsonReport = "json"

// tempKind returns the extension of the file a temporary name is for
// (lower case; "" for a shortened stem, whose extension was cut) and
// whether name is a temporary output's name (isTempName).
func tempKind(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, TempPrefix)
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return "", false
	}
	stem, token := rest[:i], rest[i+1:]
	if !validTempToken(name[:len(name)-len(token)], token) {
		return "", false
	}
	if j := len(stem) - 17; j > 0 && stem[j] == '~' && isLowerHex(stem[j+1:]) &&
		len(TempPrefix)+len(stem) >= maxNameBytes-tempSuffixBytes-utf8.UTFMax {
		return "", true // shortened by tempStem: it fills NAME_MAX
	}
	ext := strings.ToLower(filepath.Ext(stem))
	if _, ok := tempExts[ext]; !ok || ext == stem {
		return "", false
	}
	return ext, true
}

func isLowerHex(s string) bool {
	return s != "" && strings.Trim(s, "0123456789abcdef") == ""
}

// hasTempSignature reports whether head, the first bytes of a temporary
// file for a file with extension ext ("": any), is what rawbatch writes
// there: empty (created, nothing written yet), or the start of the format's
// signature (a prefix of it when shorter: killed mid-write).
func hasTempSignature(ext string, head []byte) bool {
	if len(head) == 0 {
		return true
	}
	formats := []string{tempExts[ext]}
	if ext == "" {
		formats = formats[:0]
		for _, f := range tempExts {
			formats = append(formats, f)
		}
	}
	for _, f := range formats {
		if f == "AVIF" && len(head) < 12 {
			// Its signature is at 4 ("ftypavif"): fewer bytes than
			// that agree with it vacuously.
			continue
		}
		if f == jsonReport && head[0] == '{' || f != jsonReport && f != "" && header.StartsAs(f, head) {
			return true
		}
	}
	return false
}

// RemoveStaleTemp removes the temporary output file at path if it is a
// regular file that CreateTemp made (its name, isTempName, with its token, and
// its first bytes, hasTempSignature: empty or starting like the format of
// its extension) and no live process holds its flock (it was left by a
// killed run), and returns its size in bytes and whether it was removed;
// anything else is left alone.
func RemoveStaleTemp(path string) (int64, bool) {
	ext, ok := tempKind(filepath.Base(path))
	if !ok {
		return 0, false
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return 0, false // its writer is alive
	}
	var fst, pst unix.Stat_t
	if unix.Fstat(fd, &fst) != nil || fst.Mode&unix.S_IFMT != unix.S_IFREG ||
		unix.Lstat(path, &pst) != nil || pst.Ino != fst.Ino || pst.Dev != fst.Dev {
		return 0, false
	}
	if !markedTemp(fd, path, fst.Size) {
		return 0, false // named as rawbatch names them, but not written by it
	}
	head := make([]byte, 12)
	n, err := unix.Pread(fd, head, 0)
	if err != nil || !hasTempSignature(ext, head[:max(n, 0)]) {
		return 0, false // not something rawbatch writes
	}
	// Unlinked while locked: a writer that created it and locks it only now
	// sees that the path is gone and makes another.
	if unix.Unlink(path) != nil {
		return 0, false
	}
	return fst.Size, true
}

// maxNameBytes is the longest file name (one path component) Linux file
// systems accept: NAME_MAX, 255 bytes.
const maxNameBytes = 255

// tempSuffixBytes is what follows the stem in a temporary name: "." and
// the token (tempToken).
const tempSuffixBytes = 1 + tempTokenLen

// tempStem returns the part of path's base name that temporary files for
// path carry after TempPrefix: the base name itself when the temporary
// name fits in maxNameBytes, else its longest prefix that leaves room (cut
// at a UTF-8 character boundary), "~" and 16 hex digits of the FNV-1a hash
// of the whole base name, so that every valid output name (up to 255
// bytes) gets a temporary name that fits and that names of different
// outputs stay apart.
func tempStem(path string) string {
	base := filepath.Base(path)
	if len(TempPrefix)+len(base)+tempSuffixBytes <= maxNameBytes {
		return base
	}
	h := fnv.New64a()
	h.Write([]byte(base))
	sum := "~" + hex.EncodeToString(h.Sum(nil))
	keep := maxNameBytes - len(TempPrefix) - tempSuffixBytes - len(sum)
	for keep > 0 && !utf8.RuneStart(base[keep]) {
		keep--
	}
	return base[:keep] + sum
}

// longestTempName returns the name of the temporary files for the output
// at path with the token made of zeros: every one has its length.
func longestTempName(path string) string {
	return TempPrefix + tempStem(path) + "." + strings.Repeat("0", tempTokenLen)
}
