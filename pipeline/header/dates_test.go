package header

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestCaptureWallClock: the capture time is the camera's wall clock as
// written, whatever the machine's time zone, also in that zone's
// daylight-saving gap (2019-03-10 02:30 does not exist in New York,
// 2019-03-31 02:30 not in Berlin), which the {date} names and the
// records' capture time use.
func TestCaptureWallClock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gap.dng")
	err := synthdng.WriteFile(path, synthdng.Spec{Width: 64, Height: 48, Scene: func(x, y, c int) float64 { return 0.2 },
		Timestamp: time.Date(2019, 3, 10, 2, 30, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	prev := time.Local
	defer func() { time.Local = prev }()
	for _, zone := range []string{"America/New_York", "Europe/Berlin", "UTC"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Skipf("no zone data: %v", err)
		}
		time.Local = loc
		for _, withLibRaw := range []bool{true, false} {
			h, err := readFile(path, withLibRaw, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.EXIF.DateTime.Format("2006-01-02 15:04:05 -0700"); got != "2019-03-10 02:30:00 +0000" {
				t.Errorf("TZ=%s libraw=%v: capture time %s, want 2019-03-10 02:30:00 +0000 (the wall clock as written)", zone, withLibRaw, got)
			}
		}
	}
	for _, c := range []struct {
		d    Dates
		want string
	}{
		{Dates{DateTimeOriginal: "2019:03:31 02:30:00", OffsetTimeOriginal: "+01:00", DateTime: "2020:01:01 00:00:00", OffsetTime: "+02:00"}, "2019-03-31 02:30:00 +0100"},
		{Dates{DateTime: "2023:05:22 10:59:27", OffsetTime: "-04:00"}, "2023-05-22 10:59:27 -0400"},
		{Dates{DateTimeOriginal: "2023:05:22 10:59:27", OffsetTime: "-04:00"}, "2023-05-22 10:59:27 +0000"},
		{Dates{DateTimeOriginal: "2023:05:22 10:59:27", OffsetTimeOriginal: "bad"}, "2023-05-22 10:59:27 +0000"},
		{Dates{DateTimeOriginal: "0000:00:00 00:00:00", DateTime: "2001:02:03 04:05:06"}, "2001-02-03 04:05:06 +0000"},
	} {
		if got := c.d.Capture().Format("2006-01-02 15:04:05 -0700"); got != c.want {
			t.Errorf("%+v: %s, want %s", c.d, got, c.want)
		}
	}
	if !(Dates{DateTime: "    :  :     :  :  "}).Capture().IsZero() {
		t.Error("blank date: not zero")
	}
}
