package main

import "testing"

func TestShutter(t *testing.T) {
	for s, want := range map[float64]string{1.0 / 250: "1/250s", 1.0 / 3: "1/3s", 0.6: "0.6s", 4.96743106842041: "5s", 30: "30s", 1.3: "1.3s"} {
		if got := shutter(s); got != want {
			t.Errorf("shutter(%v) = %q, want %q", s, got, want)
		}
	}
}
