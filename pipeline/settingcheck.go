package pipeline

import "fmt"

// CheckQuality returns an error when q, a JPEG quality, is outside
// 1..100: "0 out of range 1..100", for the caller to prefix with the
// setting's name (Validate: "quality 0 ...", the command line: "--quality 0 ...").
func CheckQuality(q int) error {
	if q < 1 || q > 100 {
		return fmt.Errorf("%d out of range 1..100", q)
	}
	return nil
}

// CheckExposure returns an error when ev, an exposure change in EV, is
// outside -20..20 or NaN: "NaN EV out of range -20..20", for the caller to
// prefix with the setting's name as CheckQuality's.
func CheckExposure(ev float64) error {
	if !(ev >= -20 && ev <= 20) { // also rejects NaN
		return fmt.Errorf("%g EV out of range -20..20", ev)
	}
	return nil
}
