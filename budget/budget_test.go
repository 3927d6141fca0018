package budget

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	const total = 10 << 30
	for in, want := range map[string]int64{
		"4GiB": 4 << 30, "4gib": 4 << 30, "3500MB": 3500e6, "512m": 512e6, "1073741824": 1 << 30,
		"50%": 5 << 30, "1.5GiB": 3 << 29, " 2 GiB ": 2 << 30, "100%": total, "64KiB": 64 << 10,
	} {
		got, err := ParseSize(in, total)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1GiB", "4XB", "abc", "150%", "0%", "GiB", "1e400"} {
		if _, err := ParseSize(bad, total); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

func TestEstimatePhases(t *testing.T) {
	// 24 MP Bayer, AHD, JPEG: the copy phase dominates:
	// raw 2 B + image 8 B + float 12 B per pixel.
	in := Input{RawWidth: 6000, RawHeight: 4000, CFA: true, Width: 6000, Height: 4000, Demosaic: "ahd",
		Threads: 1, OutputBytesPerPixel: 4}
	b := Estimate(in)
	if want := int64(fixedBytes + 24e6*22); b.Total != want {
		t.Errorf("24 MP AHD: %d, want %d (%+v)", b.Total, want, b)
	}
	// DCB's two float copies make the demosaic phase the peak.
	in.Demosaic = "dcb"
	if b := Estimate(in); b.Total != fixedBytes+24e6*(2+8+24) {
		t.Errorf("24 MP DCB: %d (%+v)", b.Total, b)
	}
	// Half size: a quarter of the processed pixels (the caller halves
	// Width and Height), the full raw.
	in.Demosaic, in.HalfSize = "ahd", true
	in.Width, in.Height = 3000, 2000
	if b := Estimate(in); b.Total != fixedBytes+24e6*2+6e6*20 {
		t.Errorf("24 MP half size: %d (%+v)", b.Total, b)
	}
	// A linear DNG keeps four samples per raw pixel and is not demosaiced.
	lin := Input{RawWidth: 1000, RawHeight: 1000, Width: 1000, Height: 1000, Demosaic: "ahd", OutputBytesPerPixel: 4}
	if b := Estimate(lin); b.Raw != 8e6 || b.Scratch != 0 {
		t.Errorf("linear DNG: %+v", b)
	}
	// A tiny AHD image is dominated by the touched part of the tile buffer.
	small := Input{RawWidth: 200, RawHeight: 200, CFA: true, Width: 200, Height: 200, Demosaic: "ahd", Threads: 2, OutputBytesPerPixel: 4}
	if b := Estimate(small); b.Scratch != 26*40000*2 {
		t.Errorf("small AHD scratch %d", b.Scratch)
	}
}

func TestSchedulerOverBudget(t *testing.T) {
	s := NewScheduler(1000)
	err := s.Acquire(context.Background(), 1001)
	var ob *OverBudgetError
	if !errors.Is(err, ErrOverBudget) || !errors.As(err, &ob) || ob.Need != 1001 || ob.Budget != 1000 {
		t.Fatalf("got %v", err)
	}
}

// TestSchedulerFIFO: requests are admitted in the order they are made; a
// large request at the head is not overtaken by small ones behind it, and
// the sum admitted never exceeds the budget.
func TestSchedulerFIFO(t *testing.T) {
	s := NewScheduler(100)
	ctx := context.Background()
	if err := s.Acquire(ctx, 60); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	start := func(id int, need int64) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Acquire(ctx, need); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, id)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			s.Release(need)
		}()
		time.Sleep(10 * time.Millisecond) // queue in this order
	}
	start(1, 95) // must wait for the 60 to go
	start(2, 10) // fits now (60+10 ≤ 100) but must not overtake 1, and cannot run beside it
	start(3, 10)
	mu.Lock()
	if len(order) != 0 {
		t.Fatalf("admitted %v ahead of the large request", order)
	}
	mu.Unlock()
	s.Release(60)
	wg.Wait()
	if len(order) != 3 || order[0] != 1 {
		t.Fatalf("order %v, want 1 first", order)
	}
	if peak, _ := s.Stats(); peak > 100 {
		t.Fatalf("peak admitted %d > budget", peak)
	}
}

func TestAvailable(t *testing.T) {
	a, err := Available()
	if err != nil || a <= 0 {
		t.Fatalf("Available = %d, %v", a, err)
	}
	// MemAvailable moves between the two reads: compare within 2%.
	d, _ := DefaultBudget()
	if diff := float64(d) - float64(a)/2; diff > 0.02*float64(a) || diff < -0.02*float64(a) {
		t.Fatalf("DefaultBudget %d, Available %d", d, a)
	}
}
