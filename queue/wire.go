package queue

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/rawbatch/rawbatch/internal/bytetext"
)

// The queue's messages (a Job, a Status, a DeadLetter, a WorkerInfo) are
// JSON, and a file name need not be UTF-8, which encoding/json would
// replace by U+FFFD. So each field that holds a path, or a text that may
// hold one (a failure's reason), travels as the report names a path: the
// text itself when it is valid UTF-8; else its display form, each byte that
// is not UTF-8 written \xNN, with the exact bytes beside it in a field of
// the same name and the suffix _b64 (standard base64). Reading a message
// takes the exact bytes when they are there. A Job's Payload is the
// caller's JSON, which keeps its own bytes (batch.QueuedTask sends its
// paths as bytes, as the worker wire does).

// exact returns s's bytes when s is not valid UTF-8 (the _b64 field), else
// nil (no field).
func exact(s string) []byte {
	if utf8.ValidString(s) {
		return nil
	}
	return []byte(s)
}

// display returns s with each byte that is not UTF-8 written \xNN.
func display(s string) string { return bytetext.Escape(s) }

// fromWire returns the text of a field read as shown, with its exact
// bytes b (nil: none, shown is the text).
func fromWire(shown string, b []byte) string {
	if b != nil {
		return string(b)
	}
	return shown
}

// jobFields is Job without its methods (the JSON of its plain fields).
type jobFields Job

// jobWire is a Job as JSON: Input and OutDir as the queue's rule says.
type jobWire struct {
	jobFields
	InputB64  []byte `json:"input_b64,omitempty"`
	OutDirB64 []byte `json:"outdir_b64,omitempty"`
}

// MarshalJSON writes j with its paths' exact bytes (see exact).
func (j Job) MarshalJSON() ([]byte, error) {
	w := jobWire{jobFields: jobFields(j), InputB64: exact(j.Input), OutDirB64: exact(j.OutDir)}
	w.Input, w.OutDir = display(j.Input), display(j.OutDir)
	return json.Marshal(w)
}

// UnmarshalJSON reads a Job written by MarshalJSON.
func (j *Job) UnmarshalJSON(b []byte) error {
	var w jobWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*j = Job(w.jobFields)
	j.Input, j.OutDir = fromWire(w.Input, w.InputB64), fromWire(w.OutDir, w.OutDirB64)
	return nil
}

// statusFields is Status without its methods.
type statusFields Status

// statusWire is a Status as JSON: Input, OutDir and Reason as the queue's
// rule says.
type statusWire struct {
	statusFields
	InputB64  []byte `json:"input_b64,omitempty"`
	OutDirB64 []byte `json:"outdir_b64,omitempty"`
	ReasonB64 []byte `json:"reason_b64,omitempty"`
}

// MarshalJSON writes st with its paths' and reason's exact bytes.
func (st Status) MarshalJSON() ([]byte, error) {
	w := statusWire{statusFields: statusFields(st), InputB64: exact(st.Input), OutDirB64: exact(st.OutDir), ReasonB64: exact(st.Reason)}
	w.Input, w.OutDir, w.Reason = display(st.Input), display(st.OutDir), display(st.Reason)
	return json.Marshal(w)
}

// UnmarshalJSON reads a Status written by MarshalJSON.
func (st *Status) UnmarshalJSON(b []byte) error {
	var w statusWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*st = Status(w.statusFields)
	st.Input, st.OutDir, st.Reason = fromWire(w.Input, w.InputB64), fromWire(w.OutDir, w.OutDirB64), fromWire(w.Reason, w.ReasonB64)
	return nil
}

// deadFields is DeadLetter without its methods.
type deadFields DeadLetter

// deadWire is a DeadLetter as JSON: Reason as the queue's rule says (its
// Job by Job's MarshalJSON).
type deadWire struct {
	deadFields
	ReasonB64 []byte `json:"reason_b64,omitempty"`
}

// MarshalJSON writes dl with its reason's exact bytes.
func (dl DeadLetter) MarshalJSON() ([]byte, error) {
	w := deadWire{deadFields: deadFields(dl), ReasonB64: exact(dl.Reason)}
	w.Reason = display(dl.Reason)
	return json.Marshal(w)
}

// UnmarshalJSON reads a DeadLetter written by MarshalJSON.
func (dl *DeadLetter) UnmarshalJSON(b []byte) error {
	var w deadWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*dl = DeadLetter(w.deadFields)
	dl.Reason = fromWire(w.Reason, w.ReasonB64)
	return nil
}

// workerFields is WorkerInfo without its methods.
type workerFields WorkerInfo

// workerWire is a WorkerInfo as JSON: Inputs as the queue's rule says,
// InputsB64 (only when one input is not UTF-8) holding each input's exact
// bytes, or null for one that is.
type workerWire struct {
	workerFields
	InputsB64 [][]byte `json:"inputs_b64,omitempty"`
}

// MarshalJSON writes wi with its inputs' exact bytes.
func (wi WorkerInfo) MarshalJSON() ([]byte, error) {
	w := workerWire{workerFields: workerFields(wi)}
	if wi.Inputs != nil {
		w.Inputs = make([]string, len(wi.Inputs))
	}
	for i, in := range wi.Inputs {
		w.Inputs[i] = display(in)
		if b := exact(in); b != nil {
			if w.InputsB64 == nil {
				w.InputsB64 = make([][]byte, len(wi.Inputs))
			}
			w.InputsB64[i] = b
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a WorkerInfo written by MarshalJSON.
func (wi *WorkerInfo) UnmarshalJSON(b []byte) error {
	var w workerWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*wi = WorkerInfo(w.workerFields)
	for i := range wi.Inputs {
		if i < len(w.InputsB64) {
			wi.Inputs[i] = fromWire(wi.Inputs[i], w.InputsB64[i])
		}
	}
	return nil
}
