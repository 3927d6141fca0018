package pipeline

import "context"

// whiteBalanceStage chooses the multipliers LibRaw applies to the CFA data
// before demosaic; it allocates nothing.
var whiteBalanceStage = Stage{Name: "white-balance", Scope: PerFile, Kind: Pointwise, Linear: true, Cost: noBuffers, run: stageWhiteBalance}

func stageWhiteBalance(_ context.Context, j *job) error {
	j.params = j.settings.librawParams()
	cameraWBFallback(j)
	return nil
}
