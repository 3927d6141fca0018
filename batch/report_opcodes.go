package batch

import "github.com/rawbatch/rawbatch/pipeline"

// ReportOpcodes is, in the report, what was done with a converted DNG's
// opcode lists (pipeline.OpcodesResult; docs/opcodes.md): each opcode as
// "NAME (list N)".
type ReportOpcodes struct {
	// Applied: applied by rawbatch, in the order they ran.
	Applied []string `json:"applied,omitempty"`
	// NotApplied: not applied (not implemented, a corrupt list's rest,
	// or --dng-opcodes off).
	NotApplied []string `json:"not_applied,omitempty"`
	// ByLibRaw: applied by LibRaw while decoding.
	ByLibRaw []string `json:"by_libraw,omitempty"`
}

// reportOpcodes is o for the report, nil when o is.
func reportOpcodes(o *pipeline.OpcodesResult) *ReportOpcodes {
	if o == nil {
		return nil
	}
	return &ReportOpcodes{Applied: o.Applied, NotApplied: o.NotApplied, ByLibRaw: o.ByLibRaw}
}
