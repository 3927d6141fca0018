package pipeline

import (
	"slices"
	"strings"
	"testing"
)

// Every row of Choices is whole: its default and zero parse, DefaultSettings
// holds its default, Validate refuses what Parse refuses (and a spelling
// Parse would store otherwise), and Set names the flag.
func TestChoices(t *testing.T) {
	d := DefaultSettings()
	names := map[string]bool{}
	for _, c := range Choices {
		if c.Name == "" || c.Help == "" || c.Values == "" || c.field == nil || names[c.Name] {
			t.Errorf("%q: no name, help, values or field, or a name twice", c.Name)
			continue
		}
		names[c.Name] = true
		def, err := c.Parse(c.Default)
		if err != nil {
			t.Errorf("%s: default %q: %v", c.Name, c.Default, err)
		}
		if got := *c.field(&d); got != def {
			t.Errorf("%s: DefaultSettings has %q, the table's default is %q", c.Name, got, def)
		}
		if c.Zero != "" && !slices.Contains(c.List(), c.Zero) {
			t.Errorf("%s: zero %q is none of %s", c.Name, c.Zero, c.Values)
		}
		for _, v := range c.List() {
			s := d
			if err := c.Set(&s, strings.ToUpper(v)); err != nil {
				t.Errorf("%s: %s refused: %v", c.Name, strings.ToUpper(v), err)
			}
			if err := s.Validate(); err != nil {
				t.Errorf("%s %s: %v", c.Name, v, err)
			}
		}
		s := d
		if err := c.Set(&s, "x"); err == nil || !strings.HasPrefix(err.Error(), "--"+c.Name+" ") && !strings.HasPrefix(err.Error(), "--"+c.Name+": ") {
			t.Errorf("%s: Set x: %v, want an error naming --%s", c.Name, err, c.Name)
		}
		for _, bad := range []string{"x", strings.ToUpper(c.List()[1])} {
			s := d
			*c.field(&s) = bad
			if err := s.Validate(); err == nil && (bad == "x" || c.parse == nil) {
				t.Errorf("%s %q: validated", c.Name, bad)
			}
		}
		s = d
		*c.field(&s) = ""
		if err := s.Validate(); (err == nil) != (c.Zero != "") {
			t.Errorf("%s \"\" with zero %q: Validate says %v", c.Name, c.Zero, err)
		}
	}
}

// The demosaic names are LibRaw's codes' (demosaics), and the messages of
// the table are those of the command line.
func TestChoiceMessages(t *testing.T) {
	for _, n := range demosaicChoice.List() {
		if _, ok := demosaics[Demosaic(n)]; !ok {
			t.Errorf("demosaic %s has no LibRaw code", n)
		}
	}
	if len(demosaics) != len(demosaicChoice.List()) {
		t.Errorf("%d LibRaw codes, %d demosaic names", len(demosaics), len(demosaicChoice.List()))
	}
	var s Settings
	for _, c := range []struct {
		ch       *Choice
		in, want string
	}{
		{lookChoice, "x", `--look: unknown look "x" (want default, camera or neutral)`},
		{opcodesChoice, "x", `--dng-opcodes: unknown DNG opcode mode "x" (want on or off)`},
		{subsamplingChoice, "", `--jpeg-subsampling "": want auto (444 at quality 90 and above, 420 below), 444, 422 or 420`},
	} {
		if err := c.ch.Set(&s, c.in); err == nil || err.Error() != c.want {
			t.Errorf("%s %q: %v, want %s", c.ch.Name, c.in, err, c.want)
		}
	}
	s = DefaultSettings()
	s.JPEGSubsampling = "411"
	if err := s.Validate(); err == nil || !strings.HasPrefix(err.Error(), `jpeg subsampling "411": want auto`) {
		t.Errorf("jpeg subsampling 411: %v", err)
	}
	s = DefaultSettings()
	s.WhiteLevel = "Data"
	if err := s.Validate(); err == nil || err.Error() != `unknown white level "Data" (want data or libraw)` {
		t.Errorf("white level Data: %v", err)
	}
}
