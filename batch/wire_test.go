package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline"

	"github.com/rawbatch/rawbatch/internal/rawerr"
)

// A worker refuses a request of another wire format version (or of none:
// an older parent) with exit status 2, the reason on its stderr and no
// reply, before it decodes the rest of the request.
func TestWorkerRefusesOtherWireVersion(t *testing.T) {
	for _, req := range []string{
		`{"Input":"aW4vYS5kbmc="}`,                             // no version: an unversioned parent
		fmt.Sprintf(`{"Version":%d,"Input":7}`, wireVersion+1), // a newer layout
		fmt.Sprintf(`{"Version":%d,"Identify":"aW4vYS5kbmc="}`, wireVersion-1),
	} {
		var stdout, stderr bytes.Buffer
		if code := workerMain(strings.NewReader(req), &stdout, &stderr); code != 2 {
			t.Errorf("%s: exit status %d, want 2", req, code)
		}
		if stdout.Len() != 0 {
			t.Errorf("%s: replied %q, want nothing", req, stdout.String())
		}
		if want := fmt.Sprintf("this worker speaks version %d", wireVersion); !strings.Contains(stderr.String(), want) {
			t.Errorf("%s: stderr %q, want it to say %q", req, stderr.String(), want)
		}
	}
}

// A request's paths reach the worker as the exact bytes the parent sent,
// whether UTF-8 or not.
func TestWireRequestPathsAreBytes(t *testing.T) {
	in := "in/lat\xe9.dng"
	paths := []string{"out/lat\xe9.jpg", "out/lat\xe9.thumb.webp"}
	req := workerRequest{Version: wireVersion, Input: []byte(in), Cache: &CacheRequest{Dir: []byte("/tmp/c\xff")}}
	for _, p := range paths {
		req.Outputs = append(req.Outputs, workerOutput{Path: []byte(p)})
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRequest(json.NewDecoder(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Input) != in || string(got.Cache.Dir) != "/tmp/c\xff" {
		t.Errorf("input %q, cache %q; want %q, %q", got.Input, got.Cache.Dir, in, "/tmp/c\xff")
	}
	for i, o := range got.Outputs {
		if string(o.Path) != paths[i] {
			t.Errorf("output %d: %q, want %q", i, o.Path, paths[i])
		}
	}
}

// A reply's paths, warnings and error text come back as the exact bytes
// the worker had, and its error keeps its kind and reason code (a
// preview that cannot make a variant is known by its code, not by its
// wording); a reply of another version is refused.
func TestWireReplyPathsAreBytes(t *testing.T) {
	res := pipeline.Result{
		Input: "in/lat\xe9.dng", Output: "out/lat\xe9.jpg", Width: 48, Height: 32,
		Warnings: []string{"in/lat\xe9.dng: no camera white balance"},
		Variants: []pipeline.VariantResult{
			{Name: "main", Path: "out/lat\xe9.jpg", Width: 48, Height: 32},
			{Name: "thumb", Path: "out/lat\xe9.thumb.webp", Width: 24, Height: 16},
		},
		InputHash: "xxh3:0123456789abcdef",
	}
	noPreview := &pipeline.NoPreviewError{Variant: "t", Reason: "the file has no embedded preview"}
	for _, tc := range []struct {
		err       error
		kind      error
		noPreview bool
	}{
		{nil, nil, false},
		{fmt.Errorf("in/lat\xe9.dng: %w", rawerr.ErrCorrupt), rawerr.ErrCorrupt, false},
		{fmt.Errorf("in/lat\xe9.dng: %w", rawerr.ErrUnsupported), rawerr.ErrUnsupported, false},
		{fmt.Errorf("writing out/lat\xe9.jpg: %w", ErrTransient), ErrTransient, false},
		{fmt.Errorf("in/lat\xe9.dng: %w", noPreview), rawerr.ErrUnsupported, true},
		// The same words without the type: no code.
		{fmt.Errorf("in/lat\xe9.dng: %s: %w", noPreview.Error(), rawerr.ErrUnsupported), rawerr.ErrUnsupported, false},
	} {
		b, err := json.Marshal(newReply(res, tc.err))
		if err != nil {
			t.Fatal(err)
		}
		var rep workerReply
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		got, gotErr := rep.result()
		if !reflect.DeepEqual(got, res) {
			t.Errorf("result %+v, want %+v", got, res)
		}
		switch {
		case tc.err == nil && gotErr != nil:
			t.Errorf("error %v, want none", gotErr)
		case tc.err != nil && (gotErr == nil || gotErr.Error() != tc.err.Error()):
			t.Errorf("error %q, want %q", gotErr, tc.err)
		case tc.kind != nil && !errors.Is(gotErr, tc.kind):
			t.Errorf("error %q is not %v", gotErr, tc.kind)
		case pipeline.IsNoPreview(gotErr) != tc.noPreview:
			t.Errorf("error %q: IsNoPreview %v, want %v", gotErr, !tc.noPreview, tc.noPreview)
		}
	}
	// The worker's own Result is left as it was.
	if res.Variants[0].Path != "out/lat\xe9.jpg" {
		t.Errorf("newReply changed its result: %+v", res.Variants)
	}
	rep := newReply(res, nil)
	rep.Version = wireVersion + 1
	if _, err := rep.result(); err == nil || !strings.Contains(err.Error(), "wire format version") {
		t.Errorf("reply of version %d: error %v, want a version mismatch", rep.Version, err)
	}
}

// A worker that exits without a well-formed reply fails its file with the
// kind it said on stderr (failedLine), a caught fatal signal's or else
// crashed.
func TestFailedWorkerKind(t *testing.T) {
	for _, c := range []struct {
		stderr, kind, says string
	}{
		{"", "crashed", "exited with status 2 without a reply"},
		{"something odd\n", "crashed", "without a reply: something odd"},
		{"fatal error: unexpected signal during runtime execution\n[signal SIGSEGV: segmentation violation code=1]", "crashed", "signal 11"},
		{failedLine("corrupt", "its reply could not be sent: json: unsupported value: NaN"), "corrupt", "unsupported value: NaN"},
		{failedLine("error", "bad request: x"), "error", "bad request: x"},
	} {
		err := failedWorker(2, c.stderr)
		if got := rawerr.Kind(err); got != c.kind || !strings.Contains(err.Error(), c.says) {
			t.Errorf("stderr %q: %v (kind %s), want kind %s saying %q", c.stderr, err, got, c.kind, c.says)
		}
	}
}
