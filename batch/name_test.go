package batch

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNameTemplate(t *testing.T) {
	f := NameFields{Stem: "IMG_0001", Ext: "CR3", Dir: "DCIM/100CANON", Variant: "thumb",
		Camera: "Canon EOS 6D", Date: time.Date(2019, 6, 6, 7, 29, 51, 0, time.UTC), Seq: 7}
	for _, c := range []struct {
		tmpl, want string
		rooted     bool
	}{
		{"{stem}", "IMG_0001", false},
		{"{stem}.{ext}", "IMG_0001.CR3", false},
		{"{date:2006/01}/{stem}", "2019/06/IMG_0001", true},
		{"{date}_{seq}", "2019-06-06_0007", false},
		{"{dir}/{camera}/{variant}-{stem}", "DCIM/100CANON/Canon EOS 6D/thumb-IMG_0001", true},
		{"{{{stem}}}", "{IMG_0001}", false},
	} {
		n, err := ParseNameTemplate(c.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", c.tmpl, err)
		}
		got, err := n.Expand(f)
		if err != nil || got != c.want || n.Rooted() != c.rooted {
			t.Errorf("%s → %q (rooted %v), %v; want %q (rooted %v)", c.tmpl, got, n.Rooted(), err, c.want, c.rooted)
		}
	}
	// Field values never make folders or leave OUTDIR; missing ones say so.
	n, _ := ParseNameTemplate("{camera}/{date}/{dir}/{stem}")
	got, err := n.Expand(NameFields{Stem: "a", Camera: "../A/B", Dir: "../.."})
	if err != nil || got != "_._A_B/undated/a" { // not hidden: its leading dot is '_'

		t.Errorf("unsafe fields → %q, %v", got, err)
	}
	if got, _ := n.Expand(NameFields{Stem: "a", Dir: "."}); got != "unknown-camera/undated/a" {
		t.Errorf("missing fields → %q", got)
	}
	// {dir} is nothing at the root, and no name of the expansion starts
	// with '.' (hidden, or a "._" AppleDouble file): '{dir}_{stem}' must
	// not write "._IMG_1.jpg".
	root := NameFields{Stem: "IMG_1", Dir: "."}
	for tmpl, want := range map[string]string{
		"{dir}{stem}": "IMG_1", "{dir}_{stem}": "_IMG_1", "[{dir}]{stem}": "[]IMG_1", "{dir}/{stem}": "IMG_1",
		".{stem}": "_IMG_1", "._{stem}": "__IMG_1", ".x/{stem}": "_x/IMG_1", "a/.{stem}.b": "a/_IMG_1.b",
	} {
		n, err := ParseNameTemplate(tmpl)
		if err != nil {
			t.Fatalf("%s: %v", tmpl, err)
		}
		if got, err := n.Expand(root); err != nil || got != want {
			t.Errorf("%s at the root → %q, %v; want %q", tmpl, got, err, want)
		}
	}
	if got, _ := ParseNameTemplate("{dir}_{stem}"); got != nil {
		if s, _ := got.Expand(NameFields{Stem: "IMG_1", Dir: "DCIM/.hidden"}); s != "DCIM/_hidden_IMG_1" {
			t.Errorf("{dir}_{stem} in DCIM/.hidden → %q", s)
		}
	}
	for _, bad := range []string{"", "/abs/{stem}", "../{stem}", "a/../../{stem}", "{date:..}", "{nope}", "{stem", "stem}", "{stem:x}", "{date:}"} {
		if _, err := ParseNameTemplate(bad); err == nil {
			t.Errorf("ParseNameTemplate(%q) accepted", bad)
		}
	}
}

// TestPlanNameTemplate: {seq} and collision names do not depend on the
// argument order; expansions are compared case-folded; {variant} names
// each variant's file.
func TestPlanNameTemplate(t *testing.T) {
	base := t.TempDir()
	for _, p := range []string{"c1/b.dng", "c2/a.dng", "c2/B.nef"} {
		touch(t, filepath.Join(base, p), []byte("x"))
	}
	c1, c2 := filepath.Join(base, "c1"), filepath.Join(base, "c2")
	plan := func(tmpl string, inputs ...string) map[string]string {
		n, err := ParseNameTemplate(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanBatchWith(PlanOptions{Name: n}, inputs, "/out", ".jpg", ".thumb.webp")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, task := range p.Tasks {
			rel, _ := filepath.Rel(base, task.Input)
			var outs []string
			for j, sfx := range []string{".jpg", ".thumb.webp"} {
				outs = append(outs, strings.TrimPrefix(task.OutputPath(j, sfx), "/out/"))
			}
			got[rel] = strings.Join(outs, " ")
		}
		return got
	}
	for _, c := range []struct {
		tmpl string
		want map[string]string
	}{
		{"s{seq}", map[string]string{"c1/b.dng": "s0003.jpg s0003.thumb.webp", "c2/a.dng": "s0002.jpg s0002.thumb.webp", "c2/B.nef": "s0001.jpg s0001.thumb.webp"}},
		{"{stem}", map[string]string{"c1/b.dng": "b-2.jpg b-2.thumb.webp", "c2/a.dng": "a.jpg a.thumb.webp", "c2/B.nef": "B-1.jpg B-1.thumb.webp"}},
		{"{variant}/{stem}", map[string]string{"c1/b.dng": "main/b-2.jpg thumb/b-2.webp", "c2/a.dng": "main/a.jpg thumb/a.webp", "c2/B.nef": "main/B-1.jpg thumb/B-1.webp"}},
	} {
		for _, order := range [][]string{{c1, c2}, {c2, c1}} {
			got := plan(c.tmpl, order...)
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s with %v: %s → %q, want %q", c.tmpl, order, k, got[k], v)
				}
			}
		}
	}
}

// Field values keep bytes that are not UTF-8 as they are (never U+FFFD),
// while '/', '\' and control characters become '_'.
func TestNameValueKeepsBytes(t *testing.T) {
	for in, want := range map[string]string{
		"lat\xe9":        "lat\xe9",
		" a/b\\c\n\xff ": "a_b_c_\xff",
		"\xe9\xe9":       "\xe9\xe9",
		"..":             "__",
		"":               "x",
	} {
		if got := nameValue(in, "x"); got != want {
			t.Errorf("nameValue(%q) = %q, want %q", in, got, want)
		}
	}
}
