package encode

import (
	"testing"
	"time"
)

// dates copies the strings as given and lets DateTimeOriginal and DateTime
// stand in for each other; a time stamp is used only without either.
func TestEXIFDates(t *testing.T) {
	ts := time.Date(2021, 3, 14, 2, 30, 15, 250e6, time.UTC)
	for _, c := range []struct {
		name string
		md   Metadata
		want Dates
	}{
		{"strings win over the time stamp", Metadata{DateTime: ts, Dates: Dates{DateTimeOriginal: "2021:03:14 02:30:15", OffsetTimeOriginal: "-05:00"}},
			Dates{DateTime: "2021:03:14 02:30:15", DateTimeOriginal: "2021:03:14 02:30:15", OffsetTime: "-05:00", OffsetTimeOriginal: "-05:00"}},
		{"only DateTime", Metadata{Dates: Dates{DateTime: "2023:05:22 10:59:27", OffsetTime: "-04:00"}},
			Dates{DateTime: "2023:05:22 10:59:27", DateTimeOriginal: "2023:05:22 10:59:27", OffsetTime: "-04:00", OffsetTimeOriginal: "-04:00"}},
		{"both kept apart", Metadata{Dates: Dates{DateTime: "2019:06:06 05:15:13", DateTimeOriginal: "2019:06:06 07:29:51", SubSecTimeOriginal: "00"}},
			Dates{DateTime: "2019:06:06 05:15:13", DateTimeOriginal: "2019:06:06 07:29:51", SubSecTimeOriginal: "00"}},
		{"time stamp only", Metadata{DateTime: ts},
			Dates{DateTime: "2021:03:14 02:30:15", DateTimeOriginal: "2021:03:14 02:30:15", SubSecTime: "250", SubSecTimeOriginal: "250"}},
		{"nothing", Metadata{}, Dates{}},
	} {
		if got := dates(c.md); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
