package pipeline

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// avx512Insn matches an instruction only AVX-512 CPUs run, in objdump's
// AT&T syntax: a mask register (k0–k7, KMOV, VPMOVM2D), a 512-bit
// register, a vector register past 15 (EVEX encodings only), and the
// EVEX-only conversions and permutations.
var avx512Insn = regexp.MustCompile(`%k[0-7]\b|%zmm|%[xy]mm(1[6-9]|2[0-9]|3[01])\b|\bvpmovm2|\bvpmov[dqwb]2m|\bvpermi2|\bvpermt2|\bvpternlog|\bvcvtps2udq|\bvcvtudq2ps|\bvpmovus|\bvpmov[dqw][bwd]\b|\bvblendm|\bvpblendm|\bvpcompress|\bvpexpand|\bvrndscale`)

// TestNoAVX512: none of rawbatch's code in this test binary (every
// package with vector kernels is linked into it) has an AVX-512
// instruction. The kernels run when the CPU has AVX2 (archsimd.X86.AVX2),
// and some of archsimd's operations compile to AVX-512 instructions
// (Mask32x8FromBits: KMOVB and VPMOVM2D), which would stop the process on
// a CPU with AVX2 and no AVX-512 (SIGILL), as most desktop CPUs are;
// a machine with AVX-512 runs them and shows nothing wrong.
func TestNoAVX512(t *testing.T) {
	objdump := testtool.Need(t, "objdump")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(objdump, "-d", "--no-show-raw-insn", self)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The test binary has no symbol table for objdump (go test strips
	// it): each instruction's function is the runtime's own record of its
	// address (the binary is not position-independent).
	found := map[string]string{}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		// Only vector and mask instructions (v…, k…) can match.
		if i := strings.IndexByte(line, '\t'); i < 0 || i+1 >= len(line) || line[i+1] != 'v' && line[i+1] != 'k' || !avx512Insn.MatchString(line) {
			continue
		}
		addr, _, ok := strings.Cut(strings.TrimSpace(line), ":")
		pc, err := strconv.ParseUint(addr, 16, 64)
		if !ok || err != nil {
			continue
		}
		if f := runtime.FuncForPC(uintptr(pc)); f != nil && strings.HasPrefix(f.Name(), "github.com/rawbatch/rawbatch/") && found[f.Name()] == "" {
			found[f.Name()] = strings.TrimSpace(line)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v", objdump, err)
	}
	for fn, insn := range found {
		t.Errorf("%s: AVX-512 instruction %q", fn, insn)
	}
}
