package thp

import (
	"bufio"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestFloatsHugePages: a 16 MiB buffer from Floats, written once, is
// mapped with huge pages where the kernel gives them on request (THP
// "madvise" or "always": /proc/self/smaps counts AnonHugePages in the
// mapping that holds it: at least one of its 7 or 8 whole 2 MiB pages,
// as the kernel may fall back to base pages when memory is fragmented),
// and is of the length asked. Where THP is off ("never") only the
// length is checked. (The buffer is written before it is read: a read of
// an untouched page maps the zero page, and a write then faults in a
// base page.)
func TestFloatsHugePages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("transparent huge pages are Linux's")
	}
	const n = 4 << 20 // 16 MiB of float32
	defer Hold()()
	b := Floats(n)
	if len(b) != n {
		t.Fatalf("len %d, want %d", len(b), n)
	}
	for i := range b {
		b[i] = 1
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Logf("THP unavailable here (%q, %v): only the buffer is checked", strings.TrimSpace(string(mode)), err)
		return
	}
	// The advised whole pages are a mapping of their own (madvise splits
	// the heap's): the one holding the first of them.
	first := (uintptr(unsafe.Pointer(&b[0])) + hugePage - 1) &^ (hugePage - 1)
	huge := anonHugeBytes(t, first)
	t.Logf("THP %q: %d MiB of the buffer's mapping in huge pages", strings.TrimSpace(string(mode)), huge>>20)
	if huge < hugePage {
		t.Errorf("%d bytes of huge pages in the mapping of a 16 MiB buffer, want at least %d", huge, hugePage)
	}
	runtime.KeepAlive(b)
}

// TestHoldSetsBack: while a Hold is held an advised range is marked for
// huge pages (smaps VmFlags "hg"); once the last one is let go it is
// marked for base pages ("nh"), so that khugepaged leaves what the heap
// puts there later. Only where THP is on request (madvise).
func TestHoldSetsBack(t *testing.T) {
	if !onRequest() {
		t.Skip("THP is not on request here: nothing is advised")
	}
	outer := Hold()
	inner := Hold()
	b := Floats(4 << 20)
	first := (uintptr(unsafe.Pointer(&b[0])) + hugePage - 1) &^ (hugePage - 1)
	if f := vmFlags(t, first); !slices.Contains(f, "hg") {
		t.Errorf("advised range's flags %v, want hg", f)
	}
	inner()
	inner() // a second call does nothing
	if f := vmFlags(t, first); !slices.Contains(f, "hg") {
		t.Errorf("flags %v with a Hold still held, want hg", f)
	}
	outer()
	if f := vmFlags(t, first); !slices.Contains(f, "nh") || slices.Contains(f, "hg") {
		t.Errorf("flags %v once let go, want nh", f)
	}
	runtime.KeepAlive(b)
}

// vmFlags is VmFlags of the /proc/self/smaps mapping holding address p.
func vmFlags(t *testing.T, p uintptr) []string {
	v, ok := smapsField(t, p, "VmFlags:")
	if !ok {
		t.Fatalf("no VmFlags for %#x", p)
	}
	return strings.Fields(v)
}

// TestAdviseSmall: a buffer under Min is left alone (no advice, so no
// split of the heap's mapping for it) and a nil one does not panic.
func TestAdviseSmall(t *testing.T) {
	Advise([]float32(nil))
	Advise(make([]byte, Min-1))
	Advise(make([]uint16, Min/2))
}

// anonHugeBytes is AnonHugePages, in bytes, of the /proc/self/smaps
// mapping holding address p.
func anonHugeBytes(t *testing.T, p uintptr) int64 {
	v, ok := smapsField(t, p, "AnonHugePages:")
	if !ok {
		t.Fatalf("no AnonHugePages for %#x", p)
	}
	kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return kb << 10
}

// smapsField is the value of field name ("AnonHugePages:") of the
// /proc/self/smaps mapping holding address p.
func smapsField(t *testing.T, p uintptr, name string) (string, bool) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := mappingRange(line); ok {
			in = p >= lo && p < hi
			continue
		}
		if v, ok := strings.CutPrefix(line, name); ok && in {
			return v, true
		}
	}
	return "", false
}

// mappingRange parses the address range of a mapping's first line
// ("lo-hi perms …").
func mappingRange(line string) (lo, hi uintptr, ok bool) {
	r, _, found := strings.Cut(line, " ")
	a, b, found2 := strings.Cut(r, "-")
	if !found || !found2 {
		return 0, 0, false
	}
	l, err1 := strconv.ParseUint(a, 16, 64)
	h, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(l), uintptr(h), true
}
