package main

import (
	"fmt"
	"strconv"
	"strings"
)

// parseSize parses a byte count with an optional binary suffix: 64, 4K,
// 4KiB, 1M, 2G (K = 1024). A "sweep" range is parsed by parseSizes.
func parseSize(s string) (int, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(t, "IB")
	t = strings.TrimSuffix(t, "B")
	mult := 1
	switch {
	case strings.HasSuffix(t, "K"):
		mult, t = 1<<10, strings.TrimSuffix(t, "K")
	case strings.HasSuffix(t, "M"):
		mult, t = 1<<20, strings.TrimSuffix(t, "M")
	case strings.HasSuffix(t, "G"):
		mult, t = 1<<30, strings.TrimSuffix(t, "G")
	}
	n, err := strconv.ParseUint(t, 10, 32)
	if err != nil || t == "" {
		return 0, fmt.Errorf("invalid size %q (want a number with an optional K, M or G suffix)", s)
	}
	v := n * uint64(mult)
	if v > 1<<32-1 {
		return 0, fmt.Errorf("size %q exceeds 2^32-1 octets, the largest RDMA message", s)
	}
	return int(v), nil
}

// parseSizes parses a single size, a comma-separated list, or a
// power-of-two sweep "MIN-MAX" (e.g. "64-1M" gives 64, 128, ..., 1M).
func parseSizes(s string) ([]int, error) {
	if strings.HasPrefix(strings.TrimSpace(s), "-") {
		return nil, fmt.Errorf("invalid size %q: sizes are positive (a sweep is MIN-MAX, e.g. 64-1M)", s)
	}
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, err := parseSize(lo)
		if err != nil {
			return nil, err
		}
		b, err := parseSize(hi)
		if err != nil {
			return nil, err
		}
		if a <= 0 || b < a {
			return nil, fmt.Errorf("invalid sweep %q: want MIN-MAX with 0 < MIN <= MAX", s)
		}
		var out []int
		for v := a; v <= b; v *= 2 {
			out = append(out, v)
		}
		return out, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		v, err := parseSize(part)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// formatSize renders n octets with a binary suffix when exact.
func formatSize(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dG", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return strconv.Itoa(n)
}
