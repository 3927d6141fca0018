package batch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rawbatch/rawbatch/internal/rawerr"
)

// confineFixture is a tree for the confinement tests: allowed/in (an
// input a.dng), allowed/out, and outside (a secret.dng) next to them.
type confineFixture struct {
	root, in, out, outside, input, secret string
	c                                     Confinement
}

func newConfineFixture(t *testing.T) confineFixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := confineFixture{root: root, in: filepath.Join(root, "allowed", "in"), out: filepath.Join(root, "allowed", "out"),
		outside: filepath.Join(root, "outside")}
	for _, d := range []string{f.in, f.out, f.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.input, f.secret = filepath.Join(f.in, "a.dng"), filepath.Join(f.outside, "secret.dng")
	for _, p := range []string{f.input, f.secret} {
		if err := os.WriteFile(p, []byte("raw"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if f.c, err = NewConfinement([]string{f.in, f.out}); err != nil {
		t.Fatal(err)
	}
	return f
}

// job is a task of input into outDir, as submit makes it.
func confineJob(input, outDir string) QueuedTask {
	stem := filepath.Join(outDir, strings.TrimSuffix(filepath.Base(input), filepath.Ext(input)))
	return QueuedTask{Input: input, Rel: filepath.Base(input), OutDir: outDir, Output: stem + ".jpg", OutputRel: filepath.Base(stem) + ".jpg", Stem: stem,
		Outputs: []Output{{Path: stem + ".jpg", Rel: filepath.Base(stem) + ".jpg"}}}
}

// wantRefused fails unless err wraps rawerr.ErrRefused (kind "refused")
// and contains each of names.
func wantRefused(t *testing.T, what string, err error, names ...string) {
	t.Helper()
	if !errors.Is(err, rawerr.ErrRefused) || rawerr.Kind(err) != "refused" {
		t.Errorf("%s: Admit = %v, want refused", what, err)
		return
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("%s: %q does not name %s", what, err, n)
		}
	}
}

// TestConfinementAdmit: a job within the allowed directories is admitted
// (OUTDIR not created by the check); one whose OUTDIR is outside, whose
// input is a link leading out, whose paths climb out with "..", are
// relative, whose outputs leave OUTDIR, or whose OUTDIR holds a link
// leading out, is refused naming the path; nothing is created outside.
func TestConfinementAdmit(t *testing.T) {
	f := newConfineFixture(t)
	newOut := filepath.Join(f.out, "new")
	if _, err := f.c.Admit(confineJob(f.input, newOut), nil); err != nil {
		t.Errorf("a job within the allowed directories: %v", err)
	}
	if _, err := os.Lstat(newOut); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the check created OUTDIR %s (%v)", newOut, err)
	}

	_, err := f.c.Admit(confineJob(f.input, f.outside), nil)
	wantRefused(t, "OUTDIR outside", err, "output directory "+f.outside)

	link := filepath.Join(f.in, "link.dng")
	if err := os.Symlink(f.secret, link); err != nil {
		t.Fatal(err)
	}
	_, err = f.c.Admit(confineJob(link, f.out), nil)
	wantRefused(t, "input a link leading out", err, link, f.secret)

	// An OUTDIR that is a link leading out, and one below an allowed one.
	outLink := filepath.Join(f.out, "elsewhere")
	if err := os.Symlink(f.outside, outLink); err != nil {
		t.Fatal(err)
	}
	_, err = f.c.Admit(confineJob(f.input, filepath.Join(outLink, "deeper")), nil)
	wantRefused(t, "OUTDIR under a link leading out", err, outLink)
	// A subfolder of OUTDIR that is a link leading out: the outputs
	// written there would leave it.
	q := confineJob(filepath.Join(f.in, "a.dng"), f.out)
	q.Output, q.Stem = filepath.Join(outLink, "a.jpg"), filepath.Join(outLink, "a")
	q.Outputs = []Output{{Path: q.Output, Rel: "elsewhere/a.jpg"}}
	_, err = f.c.Admit(q, nil)
	wantRefused(t, "an output folder a link leading out", err, outLink)
	// A dangling link as OUTDIR: what MkdirAll would meet.
	dangling := filepath.Join(f.out, "dangling")
	if err := os.Symlink(filepath.Join(f.outside, "none"), dangling); err != nil {
		t.Fatal(err)
	}
	_, err = f.c.Admit(confineJob(f.input, filepath.Join(dangling, "x")), nil)
	wantRefused(t, "OUTDIR below a dangling link", err, dangling)

	for name, q := range map[string]QueuedTask{
		"input with ..":  confineJob(f.in+"/../../outside/secret.dng", f.out),
		"OUTDIR with ..": confineJob(f.input, f.out+"/../../outside"),
		"relative input": confineJob("allowed/in/a.dng", f.out),
		"no input":       confineJob("", f.out),
	} {
		_, err := f.c.Admit(q, nil)
		wantRefused(t, name, err)
	}
	q = confineJob(f.input, f.out)
	q.Output = filepath.Join(f.outside, "a.jpg")
	_, err = f.c.Admit(q, nil)
	wantRefused(t, "an output outside OUTDIR", err, q.Output)
	q = confineJob(f.input, f.out)
	q.Outputs[0].Rel = "../outside/a.jpg"
	_, err = f.c.Admit(q, nil)
	wantRefused(t, "an output's relative path climbing out", err, "../outside/a.jpg")

	q = confineJob(f.input, f.out)
	q.Settings.LensDB = f.outside
	_, err = f.c.Admit(q, nil)
	wantRefused(t, "a lens database outside", err, "lens database "+f.outside)
	q.Settings.LensDB = f.in
	if _, err := f.c.Admit(q, nil); err != nil {
		t.Errorf("a lens database inside: %v", err)
	}

	fifo := filepath.Join(f.in, "fifo.dng")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = f.c.Admit(confineJob(fifo, f.out), nil)
	wantRefused(t, "a FIFO input", err, "not a regular file")

	if ents, _ := os.ReadDir(f.outside); len(ents) != 1 {
		t.Errorf("outside holds %v, want secret.dng alone", ents)
	}
}

// TestConfinementPathMap: the checks apply to the paths as the worker
// sees them: a path --path-map takes out of the allowed directories is
// refused, one it takes in is admitted (returned mapped); a job path that
// climbs out of a mapping with ".." is refused before mapping; a mapping
// to a relative path is refused after it.
func TestConfinementPathMap(t *testing.T) {
	f := newConfineFixture(t)
	sub := "/submitter/nas"
	m := PathMap{{From: sub + "/esc", To: f.outside}, {From: sub, To: filepath.Join(f.root, "allowed")}}
	got, err := f.c.Admit(confineJob(sub+"/in/a.dng", sub+"/out"), m)
	if err != nil {
		t.Fatalf("a mapped job within the allowed directories: %v", err)
	}
	if got.Input != f.input || got.OutDir != f.out || got.Outputs[0].Path != filepath.Join(f.out, "a.jpg") {
		t.Errorf("admitted job's paths %s %s %s, want them mapped", got.Input, got.OutDir, got.Outputs[0].Path)
	}
	_, err = f.c.Admit(confineJob(sub+"/esc/secret.dng", sub+"/out"), m)
	wantRefused(t, "an input mapped outside", err, f.secret)
	_, err = f.c.Admit(confineJob(sub+"/in/../../../outside/secret.dng", sub+"/out"), m)
	wantRefused(t, "a job path climbing out of its mapping", err, "not an absolute clean path")
	_, err = f.c.Admit(confineJob("/unmapped/a.dng", sub+"/out"), m)
	wantRefused(t, "an input no mapping covers", err, "/unmapped/a.dng")
	_, err = f.c.Admit(confineJob(sub+"/in/a.dng", sub+"/out"), PathMap{{From: sub, To: "relative"}})
	wantRefused(t, "a mapping to a relative path", err, "after --path-map")
}

// TestConfinementOpenedInput: the input is opened at the path checked
// without following a link: one swapped in after the check (the path
// given is the checked one, a link now) is refused, not followed.
func TestConfinementOpenedInput(t *testing.T) {
	f := newConfineFixture(t)
	if err := f.c.openedInput(f.input, f.input); err != nil {
		t.Errorf("the checked file: %v", err)
	}
	swapped := filepath.Join(f.in, "swapped.dng")
	if err := os.Symlink(f.secret, swapped); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, "a link swapped in after the check", f.c.openedInput(swapped, swapped), "became a symbolic link")
	if err := f.c.openedInput(filepath.Join(f.in, "gone.dng"), filepath.Join(f.in, "gone.dng")); err != nil {
		t.Errorf("a missing input (deleted since it was submitted): %v, want it left to the runner", err)
	}
}

// TestNewConfinement: at least one directory, each existing and a
// directory; links in them resolved.
func TestNewConfinement(t *testing.T) {
	f := newConfineFixture(t)
	if _, err := NewConfinement(nil); err == nil {
		t.Error("no directory accepted")
	}
	if _, err := NewConfinement([]string{filepath.Join(f.root, "missing")}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing directory: %v", err)
	}
	if _, err := NewConfinement([]string{f.input}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
	link := filepath.Join(f.root, "inlink")
	if err := os.Symlink(f.in, link); err != nil {
		t.Fatal(err)
	}
	c, err := NewConfinement([]string{link})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Dirs(); len(got) != 1 || got[0] != f.in {
		t.Errorf("Dirs = %v, want the link resolved to %s", got, f.in)
	}
}
