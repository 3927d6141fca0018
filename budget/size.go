package budget

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// units are the accepted byte-size suffixes: IEC binary (KiB, MiB, GiB,
// TiB) and SI decimal (KB, MB, GB, TB), case-insensitive.
var units = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// ParseSize parses a memory size: a number with an optional unit ("4GiB",
// "3500MB", "512m", "1073741824"), or a percentage of total ("50%"). total
// is what a percentage refers to (see Available). The result is in bytes
// and must be positive.
func ParseSize(s string, total int64) (int64, error) {
	t := strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(t, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(v > 0) || v > 100 {
			return 0, fmt.Errorf("memory size %q: a percentage must be in (0, 100]", s)
		}
		return int64(float64(total) * v / 100), nil
	}
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(t[:i]), strings.ToLower(strings.TrimSpace(t[i:]))
	}
	mul, ok := units[unit]
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || !(v > 0) || v*mul > math.MaxInt64/2 {
		return 0, fmt.Errorf("memory size %q: want a positive number with an optional unit (KiB, MiB, GiB, KB, MB, GB) or a percentage like 50%%", s)
	}
	return int64(v * mul), nil
}

// FormatSize renders bytes for people: "1.5 GiB", "820 MiB", "64 KiB".
func FormatSize(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

// Available returns the memory this process may use, in bytes: the smaller
// of the cgroup memory limit (cgroup v2 memory.max, or v1
// memory.limit_in_bytes) and MemAvailable from /proc/meminfo.
func Available() (int64, error) {
	avail, err := memAvailable("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	if lim, ok := cgroupLimit(); ok && lim < avail {
		return lim, nil
	}
	return avail, nil
}

// DefaultBudget is half of Available, the default of --mem-budget.
func DefaultBudget() (int64, error) {
	a, err := Available()
	return a / 2, err
}

func memAvailable(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", path, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("%s: no MemAvailable line", path)
}

// cgroupLimit reads this process's cgroup memory limit, if any.
func cgroupLimit() (int64, bool) {
	// cgroup v2: the process's group from /proc/self/cgroup ("0::/path").
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(line, "0::"); ok {
				if v, ok := readLimit("/sys/fs/cgroup" + p + "/memory.max"); ok {
					return v, true
				}
			}
		}
	}
	if v, ok := readLimit("/sys/fs/cgroup/memory.max"); ok {
		return v, true
	}
	return readLimit("/sys/fs/cgroup/memory/memory.limit_in_bytes")
}

func readLimit(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || v >= 1<<60 { // "max", or v1's "unlimited" 2^63-4096
		return 0, false
	}
	return v, true
}

// FileSystemSize returns the size in bytes of the file system holding path,
// or the nearest existing parent of path (statfs).
func FileSystemSize(path string) (int64, error) {
	for p := path; ; {
		var st syscall.Statfs_t
		err := syscall.Statfs(p, &st)
		if err == nil {
			return int64(st.Blocks) * int64(st.Bsize), nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return 0, err
		}
		p = parent
	}
}
