package encode

import (
	"testing"
	"time"
)

// dates copies the strings as given, and only those; a time stamp is used
// only without any, as DateTimeOriginal. DateTime and DateTimeOriginal do
// not stand in for each other: a DNG with only a ModifyDate does not get
// it as DateTimeOriginal, a capture time it does not have.
func TestEXIFDates(t *testing.T) {
	ts := time.Date(2021, 3, 14, 2, 30, 15, 250e6, time.UTC)
	for _, c := range []struct {
		name string
		md   Metadata
		want Dates
	}{
		{"strings win over the time stamp", Metadata{DateTime: ts, Dates: Dates{DateTimeOriginal: "2021:03:14 02:30:15", OffsetTimeOriginal: "-05:00"}},
			Dates{DateTimeOriginal: "2021:03:14 02:30:15", OffsetTimeOriginal: "-05:00"}},
		{"only DateTime, never promoted", Metadata{DateTime: ts, Dates: Dates{DateTime: "2023:05:22 10:59:27", OffsetTime: "-04:00"}},
			Dates{DateTime: "2023:05:22 10:59:27", OffsetTime: "-04:00"}},
		{"only DateTimeDigitized", Metadata{DateTime: ts, Dates: Dates{DateTimeDigitized: "2023:05:22 10:59:27"}},
			Dates{DateTimeDigitized: "2023:05:22 10:59:27"}},
		{"both kept apart", Metadata{Dates: Dates{DateTime: "2019:06:06 05:15:13", DateTimeOriginal: "2019:06:06 07:29:51", SubSecTimeOriginal: "00"}},
			Dates{DateTime: "2019:06:06 05:15:13", DateTimeOriginal: "2019:06:06 07:29:51", SubSecTimeOriginal: "00"}},
		{"time stamp only", Metadata{DateTime: ts},
			Dates{DateTimeOriginal: "2021:03:14 02:30:15", SubSecTimeOriginal: "250"}},
		{"nothing", Metadata{}, Dates{}},
	} {
		if got := dates(c.md); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
