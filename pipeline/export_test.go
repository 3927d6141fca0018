package pipeline

import "context"

// The conversions the tests call by their old shapes: one output, or
// several with a stage cache, through ConvertOutputs.

// ConvertFile converts the RAW file in to the output file out with settings
// s. out is written through a temporary file in its directory that is
// renamed into place only when everything succeeded, so a failed
// conversion leaves no output file, not even an empty or partial one. The
// output directory must exist.
//
// Errors name the input path and wrap rawerr.ErrEmpty, ErrNotRaw,
// ErrUnsupported or ErrCorrupt for bad input, and context errors when ctx
// ends.
func ConvertFile(ctx context.Context, in, out string, s Settings) (res Result, err error) {
	vs := s.OutputVariants()
	return ConvertOutputs(ctx, in, []OutputSpec{{Variant: vs[0], Path: out}}, s, ConvertOptions{})
}

// ConvertVariants converts the RAW file in once and writes every output of
// outs from that one decode, each through its own temporary file; the
// outputs are renamed into place only when all of them succeeded. With
// cache set, the decoded image is read from or written to the stage cache.
func ConvertVariants(ctx context.Context, in string, outs []OutputSpec, s Settings, c *CacheOptions) (Result, error) {
	return ConvertOutputs(ctx, in, outs, s, ConvertOptions{Cache: c})
}
