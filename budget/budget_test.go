package budget

import (
	"context"
	"errors"
	"strings"
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

func TestSchedulerOverBudget(t *testing.T) {
	s := NewScheduler(1000)
	err := s.Acquire(context.Background(), 1001)
	var ob *OverBudgetError
	if !errors.Is(err, ErrOverBudget) || !errors.As(err, &ob) || ob.Need != 1001 || ob.Budget != 1000 {
		t.Fatalf("got %v", err)
	}
	// Sizes that read the same for people are given in bytes.
	for _, c := range []struct {
		need, budget int64
		want         string
	}{
		{180528000, 180000000, "needs an estimated 180528000 bytes, the budget is 180000000 bytes"},
		{400 << 20, 300 << 20, "needs an estimated 400 MiB, the budget is 300 MiB"},
	} {
		if got := (&OverBudgetError{Need: c.need, Budget: c.budget}).Error(); !strings.Contains(got, c.want) {
			t.Errorf("%d over %d: %q, want it to say %q", c.need, c.budget, got, c.want)
		}
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
