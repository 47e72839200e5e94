package netem

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseProfile reads a profile written as comma-separated key=value
// pairs: rtt (both ways; or delay, one way), jitter, loss and duplicate
// and reorder (per cent, "1%" or "1"), burst (mean loss burst, packets),
// rate (bits per second: 100M, 1G, 64k) and queue (octets: 256K, 1M).
// For example "rtt=50ms,loss=0.1%,rate=100M".
func ParseProfile(s string) (Profile, error) {
	var p Profile
	if strings.TrimSpace(s) == "" {
		return p, fmt.Errorf("%w: empty profile", ErrProfile)
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || v == "" {
			return p, fmt.Errorf("%w: %q is not key=value", ErrProfile, kv)
		}
		var err error
		switch k {
		case "rtt":
			var d time.Duration
			d, err = time.ParseDuration(v)
			p.Delay = d / 2
		case "delay":
			p.Delay, err = time.ParseDuration(v)
		case "jitter":
			p.Jitter, err = time.ParseDuration(v)
		case "loss":
			p.Loss, err = percent(v)
		case "duplicate":
			p.Duplicate, err = percent(v)
		case "reorder":
			p.Reorder, err = percent(v)
		case "burst":
			p.LossBurst, err = strconv.ParseFloat(v, 64)
		case "rate":
			p.Rate, err = scaled(v, 1000, "bit", "bps")
		case "queue":
			var q int64
			q, err = scaled(v, 1024, "B")
			p.Queue = int(q)
		default:
			return p, fmt.Errorf("%w: unknown key %q (want rtt, delay, jitter, loss, burst, duplicate, reorder, rate, queue)", ErrProfile, k)
		}
		if err != nil {
			return p, fmt.Errorf("%w: %s=%s: %v", ErrProfile, k, v, err)
		}
	}
	return p, p.Validate()
}

// percent reads "1%" or "1" as 0.01.
func percent(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
	return f / 100, err
}

// scaled reads a number with an optional k, M or G suffix in steps of
// unit (1000 for rates, 1024 for sizes), after dropping the given unit
// suffixes.
func scaled(v string, unit float64, suffixes ...string) (int64, error) {
	for _, s := range suffixes {
		v = strings.TrimSuffix(v, s)
	}
	mult := 1.0
	if n := len(v); n > 0 {
		switch v[n-1] {
		case 'k', 'K':
			mult, v = unit, v[:n-1]
		case 'M':
			mult, v = unit*unit, v[:n-1]
		case 'G':
			mult, v = unit*unit*unit, v[:n-1]
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("want a non-negative number with an optional k, M or G")
	}
	return int64(f * mult), nil
}
