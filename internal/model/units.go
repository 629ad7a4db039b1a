package model

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// quantity is a number with an optional SI (k, M, G, T, P: powers of
// 1000) or binary (Ki, Mi, Gi, Ti, Pi: powers of 1024) prefix and an
// optional unit: bits ("b", "bit", "bits") or bytes ("B", "byte",
// "bytes"), optionally per second ("/s", "ps"). unit is "" without one.
type quantity struct {
	value float64
	unit  string // "", "bit" or "byte"
}

func parseQuantity(s string) (quantity, error) {
	orig := s
	s = strings.TrimSpace(s)
	// The number: the longest prefix of number characters that parses
	// ("1.5e6", "2", ".5").
	end := 0
	for end < len(s) {
		c := s[end]
		if c >= '0' && c <= '9' || c == '.' || c == '+' || c == '-' {
			end++
			continue
		}
		if (c == 'e' || c == 'E') && end+1 < len(s) && (s[end+1] >= '0' && s[end+1] <= '9' || s[end+1] == '-' || s[end+1] == '+') {
			end++
			continue
		}
		break
	}
	v, err := strconv.ParseFloat(s[:end], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return quantity{}, fmt.Errorf("%q is not a number with a unit (like 10Gbit, 2TiB, 50MB/s)", orig)
	}
	rest := strings.TrimSpace(s[end:])
	rest = strings.TrimSuffix(rest, "/s")
	if strings.HasSuffix(rest, "ps") && len(rest) > 2 {
		rest = strings.TrimSuffix(rest, "ps") // Gbps, MBps
	}
	mult := 1.0
	if rest != "" {
		base := 1000.0
		if len(rest) >= 2 && rest[1] == 'i' {
			base = 1024
		}
		pow := strings.IndexByte("kMGTP", rest[0])
		if rest[0] == 'K' {
			pow = 0
		}
		if pow >= 0 {
			mult = math.Pow(base, float64(pow+1))
			rest = rest[1:]
			if base == 1024 {
				rest = rest[1:]
			}
		}
	}
	q := quantity{value: v * mult}
	switch rest {
	case "":
	case "b", "bit", "bits":
		q.unit = "bit"
	case "B", "byte", "bytes":
		q.unit = "byte"
	default:
		return quantity{}, fmt.Errorf("%q: unknown unit %q (want bit or b, byte or B, with k, M, G, T, Ki, Mi, Gi, Ti)", orig, rest)
	}
	return q, nil
}

// ParseBits parses a rate in bits/s such as "10Gbit", "10Gbit/s",
// "10Gbps" or "25G" (no unit: bits). Byte units ("1.25GB/s") are
// converted.
func ParseBits(s string) (float64, error) {
	q, err := parseQuantity(s)
	if q.unit == "byte" {
		q.value *= 8
	}
	return q.value, err
}

// ParseBytes parses a size or a rate in bytes such as "2TiB", "500GB",
// "50MB/s" or "1e12" (no unit: bytes). Bit units ("400Mbit/s") are
// converted.
func ParseBytes(s string) (float64, error) {
	q, err := parseQuantity(s)
	if q.unit == "bit" {
		q.value /= 8
	}
	return q.value, err
}

// ParseCount parses a plain number with an optional SI prefix: "1.5M" is
// 1.5e6.
func ParseCount(s string) (float64, error) {
	q, err := parseQuantity(s)
	if err == nil && q.unit != "" {
		return 0, fmt.Errorf("%q: a count has no unit", s)
	}
	return q.value, err
}

// ParseDuration is time.ParseDuration that also takes days ("7d") and
// weeks ("2w"), alone or before other units ("1d12h").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var total time.Duration
	for _, u := range []struct {
		suffix string
		d      time.Duration
	}{{"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}} {
		i := strings.Index(s, u.suffix)
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(s[:i], 64)
		if err != nil || v < 0 || v > 1e5 {
			return 0, fmt.Errorf("duration %q: want a form like 7d, 168h, 1d12h or 30m", s)
		}
		total += time.Duration(v * float64(u.d))
		s = s[i+1:]
	}
	if s == "" {
		return total, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want a form like 7d, 168h, 1d12h or 30m", s)
	}
	return total + d, nil
}

// FormatBits formats bits/s with an SI prefix: "288 Mbit/s".
func FormatBits(v float64) string { return si(v, "bit/s") }

// FormatBytes formats bytes with a binary prefix: "1.5 TiB".
func FormatBytes(v float64) string { return binary(v, "B") }

// FormatByteRate formats bytes/s with an SI prefix, as disks and Kafka's
// throttles are given: "120 MB/s".
func FormatByteRate(v float64) string { return si(v, "B/s") }

// FormatCount formats a count with an SI prefix: "1.5M".
func FormatCount(v float64) string { return strings.ReplaceAll(si(v, ""), " ", "") }

func si(v float64, unit string) string {
	prefixes := []string{"", "k", "M", "G", "T", "P", "E"}
	i := 0
	a := math.Abs(v)
	for a >= 1000 && i < len(prefixes)-1 {
		a /= 1000
		v /= 1000
		i++
	}
	return num(v) + " " + prefixes[i] + unit
}

func binary(v float64, unit string) string {
	prefixes := []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	i := 0
	a := math.Abs(v)
	for a >= 1024 && i < len(prefixes)-1 {
		a /= 1024
		v /= 1024
		i++
	}
	return num(v) + " " + prefixes[i] + unit
}

// num prints v with 3 significant digits, more for large integers' whole
// part, without trailing zeros.
func num(v float64) string {
	a := math.Abs(v)
	var s string
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		s = strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	default:
		s = strconv.FormatFloat(v, 'g', 3, 64)
	}
	if strings.Contains(s, ".") && !strings.ContainsAny(s, "eE") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// FormatDuration formats a duration for people: "6h12m", "2d3h", "45s",
// "120ms".
func FormatDuration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d >= 48*time.Hour:
		days := d / (24 * time.Hour)
		s = fmt.Sprintf("%dd", days)
		if h := (d - days*24*time.Hour) / time.Hour; h > 0 {
			s += fmt.Sprintf("%dh", h)
		}
	case d >= time.Hour:
		s = fmt.Sprintf("%dh%02dm", d/time.Hour, (d%time.Hour)/time.Minute)
	case d >= time.Minute:
		s = fmt.Sprintf("%dm%02ds", d/time.Minute, (d%time.Minute)/time.Second)
	case d >= time.Second:
		s = num(d.Seconds()) + "s"
	default:
		s = num(float64(d)/float64(time.Millisecond)) + "ms"
	}
	if neg {
		s = "-" + s
	}
	return s
}
