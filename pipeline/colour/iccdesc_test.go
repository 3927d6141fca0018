package colour

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// Every embedded profile carries its full description, a size field equal
// to its length (a multiple of 4), a tag table whose entries lie inside it,
// and the profile ID of its bytes.
func TestICCDescriptions(t *testing.T) {
	for _, name := range ICCProfileNames() {
		p, _ := ICCProfile(name)
		want, ok := iccDescriptions[name]
		if !ok {
			t.Errorf("%s: no description", name)
			continue
		}
		if got, err := ICCDescription(p); err != nil || got != want {
			t.Errorf("%s: description %q (%v), want %q", name, got, err, want)
		}
		if size := binary.BigEndian.Uint32(p); int(size) != len(p) || len(p)%4 != 0 {
			t.Errorf("%s: size field %d, length %d", name, size, len(p))
		}
		if id := ICCProfileID(p); !bytes.Equal(id[:], p[84:100]) {
			t.Errorf("%s: profile ID %x, MD5 gives %x", name, p[84:100], id)
		}
		n := int(binary.BigEndian.Uint32(p[128:]))
		for i := range n {
			e := p[132+12*i:]
			off, size := binary.BigEndian.Uint32(e[4:]), binary.BigEndian.Uint32(e[8:])
			if off%4 != 0 || int(off+size) > len(p) {
				t.Errorf("%s: tag %q at %d (%d bytes) misaligned or outside", name, e[:4], off, size)
			}
		}
	}
}

// The published profiles' IDs follow ICC.1:2010 §7.2.18 as ICCProfileID
// computes it, so the rewritten IDs are made the same way.
func TestICCProfileIDOfPublishedProfiles(t *testing.T) {
	for _, name := range ICCProfileNames() {
		p, err := iccFS.ReadFile("icc/" + name + ".icc")
		if err != nil {
			t.Fatal(err)
		}
		if id := ICCProfileID(p); !bytes.Equal(id[:], p[84:100]) {
			t.Errorf("%s: published ID %x, ICCProfileID %x", name, p[84:100], id)
		}
	}
}

// exiftool reads the descriptions back (a missing exiftool fails under
// CI=true), and finds no warning in the rewritten profiles.
func TestICCDescriptionsExiftool(t *testing.T) {
	bin := testtool.Need(t, "exiftool")
	dir := t.TempDir()
	for _, name := range ICCProfileNames() {
		p, _ := ICCProfile(name)
		f := filepath.Join(dir, name+".icc")
		if err := os.WriteFile(f, p, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "-s3", "-ProfileDescription", "-ProfileID", "-Warning", f).CombinedOutput()
		if err != nil {
			t.Fatalf("exiftool %s: %v\n%s", f, err, out)
		}
		id := ICCProfileID(p)
		want := iccDescriptions[name] + "\n" + hex.EncodeToString(id[:]) + "\n"
		if string(out) != want {
			t.Errorf("%s: exiftool reads %q, want %q", name, out, want)
		}
	}
}
