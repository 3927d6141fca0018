package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/batch"
	"github.com/rogpeppe/go-internal/testscript"
)

// validate checks value v (decoded with UseNumber) against schema s, for
// the subset of JSON Schema that docs/report.schema.json uses: type,
// properties, required, additionalProperties, items, enum, minimum, format
// date-time and contentEncoding base64. Any other keyword is an error, so
// that the schema cannot say more than is checked. It returns every
// violation, with its JSON path.
func validate(s map[string]any, v any, at string) []string {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, at+": "+fmt.Sprintf(format, a...)) }
	for k := range s {
		switch k {
		case "$schema", "$id", "title", "description", "type", "properties", "required",
			"additionalProperties", "items", "enum", "minimum", "format", "contentEncoding":
		default:
			bad("schema keyword %q is not supported by this validator", k)
		}
	}
	if t, ok := s["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, e := range t {
				types = append(types, e.(string))
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
			bad("%v is not of type %v", v, types)
			return errs
		}
	}
	if e, ok := s["enum"].([]any); ok {
		if !slices.ContainsFunc(e, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) }) {
			bad("%v is not one of %v", v, e)
		}
	}
	if m, ok := s["minimum"].(json.Number); ok {
		if n, isNum := v.(json.Number); isNum {
			min, _ := m.Float64()
			if f, _ := n.Float64(); f < min {
				bad("%v is less than %v", v, m)
			}
		}
	}
	if str, ok := v.(string); ok {
		if s["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				bad("%q is not an RFC 3339 date-time", str)
			}
		}
		if s["contentEncoding"] == "base64" {
			if _, err := base64.StdEncoding.DecodeString(str); err != nil {
				bad("%q is not base64", str)
			}
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := s["properties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, ok := obj[r.(string)]; !ok {
					bad("missing required field %q", r)
				}
			}
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := props[k].(map[string]any); ok {
				errs = append(errs, validate(ps, obj[k], at+"."+k)...)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					bad("field %q is not in the schema", k)
				}
			case map[string]any:
				errs = append(errs, validate(ap, obj[k], at+"."+k)...)
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if is, ok := s["items"].(map[string]any); ok {
			for i, e := range arr {
				errs = append(errs, validate(is, e, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	}
	return errs
}

// hasType reports whether v, decoded with UseNumber, is of JSON Schema
// type t.
func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	}
	return false
}

func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// TestValidatorCatches: the validator finds what the schema forbids (so a
// passing schema script means something).
func TestValidatorCatches(t *testing.T) {
	b, err := os.ReadFile("../../docs/report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	sv, err := decodeJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	schema := sv.(map[string]any)
	for _, doc := range []string{
		`{}`,
		`{"rawbatch_version": 1}`,
		`{"summary": {"converted": -1}}`,
		`{"files": [{"input": "a", "status": "done", "outputs": [], "estimated_bytes": 0, "peak_bytes": 0, "duration_ms": 0}]}`,
		`{"start_time": "yesterday"}`,
		`{"extra": true}`,
	} {
		v, err := decodeJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if errs := validate(schema, v, "$"); len(errs) == 0 {
			t.Errorf("%s: no violation found", doc)
		}
	}
	if !reflect.DeepEqual(validate(map[string]any{"type": "string"}, "x", "$"), []string(nil)) {
		t.Error("a string is not a string")
	}
}

// schema FILE: FILE's JSON validates against docs/report.schema.json.
func cmdSchema(ts *testscript.TestScript, neg bool, args []string) {
	b, err := os.ReadFile("../../docs/report.schema.json") // tests run in the package directory
	ts.Check(err)
	sv, err := decodeJSON(b)
	ts.Check(err)
	v, err := decodeJSON([]byte(ts.ReadFile(args[0])))
	ts.Check(err)
	errs := validate(sv.(map[string]any), v, "$")
	if (len(errs) == 0) == neg {
		ts.Fatalf("%s against docs/report.schema.json: %d violations\n%s", args[0], len(errs), strings.Join(errs, "\n"))
	}
}

// rbpaths FILE: every input and output path of the --report FILE
// (input_b64 / path_b64 when given, else input / path) names an existing
// file, relative to the script's directory.
func cmdReportPaths(ts *testscript.TestScript, neg bool, args []string) {
	var r struct {
		Files []struct {
			Input    string
			InputB64 string `json:"input_b64"`
			Outputs  []struct {
				Path    string
				PathB64 string `json:"path_b64"`
			}
		}
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &r))
	exact := func(display, b64 string) string {
		if b64 == "" {
			return display
		}
		b, err := base64.StdEncoding.DecodeString(b64)
		ts.Check(err)
		return string(b)
	}
	n := 0
	for _, f := range r.Files {
		paths := []string{exact(f.Input, f.InputB64)}
		for _, o := range f.Outputs {
			paths = append(paths, exact(o.Path, o.PathB64))
		}
		for _, p := range paths {
			if _, err := os.Stat(filepath.Join(ts.Getenv("WORK"), p)); err != nil {
				ts.Fatalf("%s: %q: %v", args[0], p, err)
			}
			n++
		}
	}
	ts.Logf("%d paths found", n)
}

// jsonl FILE: every line of FILE is a JSON object with the fields time
// (RFC 3339), level and event of --log-format json; there is at least one.
func cmdJSONLines(ts *testscript.TestScript, neg bool, args []string) {
	lines := strings.Split(strings.TrimSuffix(ts.ReadFile(args[0]), "\n"), "\n")
	for i, l := range lines {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			ts.Fatalf("%s:%d: %v: %q", args[0], i+1, err, l)
		}
		tm, _ := ev["time"].(string)
		if _, err := time.Parse(time.RFC3339Nano, tm); err != nil {
			ts.Fatalf("%s:%d: time %q: %v", args[0], i+1, tm, err)
		}
		for _, k := range []string{"level", "event"} {
			if s, _ := ev[k].(string); s == "" {
				ts.Fatalf("%s:%d: no %s", args[0], i+1, k)
			}
		}
	}
}

// TestFailureKindsDocumented: the schema's kind enum and docs/reruns.md's
// list of failure kinds are the kinds the code can emit, no more, no less.
func TestFailureKindsDocumented(t *testing.T) {
	want := batch.FailureKinds()
	b, err := os.ReadFile("../../docs/report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			Files struct {
				Items struct {
					Properties struct {
						Kind struct{ Enum []string }
					}
				}
			}
		}
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if got := s.Properties.Files.Items.Properties.Kind.Enum; !reflect.DeepEqual(got, want) {
		t.Errorf("docs/report.schema.json: files[].kind enum %q, the code emits %q", got, want)
	}
	md, err := os.ReadFile("../../docs/reruns.md")
	if err != nil {
		t.Fatal(err)
	}
	// "the kinds of `failed.jsonl`: `empty`, `not-raw`, ...; ..." or "...)"
	const lead = "the kinds of `failed.jsonl`:"
	text := strings.Join(strings.Fields(string(md)), " ")
	i := strings.Index(text, lead)
	if i < 0 {
		t.Fatalf("docs/reruns.md: no %q", lead)
	}
	list := text[i+len(lead):]
	list = list[:strings.IndexAny(list, ";)")]
	var got []string
	for _, f := range strings.Split(list, ",") {
		got = append(got, strings.Trim(strings.TrimSpace(f), "`"))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("docs/reruns.md lists kinds %q, the code emits %q", got, want)
	}
}
