// Package pipeline is the develop of one RAW file: from the file on disk to
// its output images (JPEG, PNG, TIFF, WebP), every output of the file from
// one decode.
//
// What runs is the stage list, Stages in stages.go: one entry per stage,
// each declared in its own file (stage_*.go) with its scope (once per file
// or once per output variant), its kind (pointwise, spatial, ...), whether
// it is linear, its memory cost and, for the stages that have one, a row
// kernel (fused passes) and a band form (streaming). The stage files are
// thin adapters: the algorithms live in the packages beneath this one
// (demosaic, denoise, highlight, lens, look, resize, warp, dngopcode,
// colour, encode), the C libraries behind the bindings in internal/
// (LibRaw, libjpeg-turbo, lensfun).
//
// A conversion has three parts:
//
//   - the planner (PlanStages, PlanVariants) turns the settings and the
//     decoded size into the ordered steps of each variant, shared steps
//     once, pointwise steps fused into passes; the dry run prints it;
//   - the executor (ConvertOutputs, its runPlan) runs those steps in order,
//     the whole image at a time, or, for a single JPEG or TIFF16 output
//     whose stages all have a band form, from demosaic to encode in row
//     bands without a full-size image (stream.go);
//   - the commit renames every temporary output into place only when all
//     of them were written (commit), so a failed file leaves no output.
//
// EstimateMemory adds up the steps' costs into the peak memory a file
// needs (LibRaw's buffers and the encoders' included), which the runner
// admits against its budget; DecodedSize and CheckOutputLimits answer
// before any decode.
//
// The develop knows one file. Batches, the queue, the up-to-date records
// and the output locks are the runner's (batch, queue, state, lock), which
// this package does not import: it takes a file, its outputs, the
// settings and ConvertOptions, and returns a Result or an error wrapping
// one of internal/rawerr's kinds.
package pipeline
