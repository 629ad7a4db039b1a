package jvmlog

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"
)

// decorated is one log line split into the decorations kscope uses and
// the message.
type decorated struct {
	wall    int64 // Unix ns of a wall-clock decoration, truncated to the ms
	hasWall bool
	// counter is a nanosecond decoration (timenanos or uptimenanos): a
	// monotonic clock whose offset to the wall clock is constant.
	counter    int64
	hasCounter bool
	tags       string // "" when the line has no tags decoration
	msg        []byte
}

// maxDecorations bounds the bracketed fields read before the message: a
// JVM has 12 decorators.
const maxDecorations = 16

// isoLayout is HotSpot's time and utctime decorations:
// 2026-11-25T13:37:50.611+0000.
const isoLayout = "2006-01-02T15:04:05.000-0700"

// minWallMillis tells a timemillis decoration (the wall clock in ms) from
// an uptimemillis one: 2001-09-09 in ms since 1970.
const minWallMillis = 1_000_000_000_000

// splitDecorations reads the leading [..] fields of a line. A line that
// does not start with '[' has no decorations: ok is false.
func splitDecorations(l []byte) (d decorated, ok bool) {
	if len(l) == 0 || l[0] != '[' {
		return d, false
	}
	for n := 0; len(l) > 0 && l[0] == '['; n++ {
		end := bytes.IndexByte(l, ']')
		if end < 0 || n == maxDecorations {
			return d, false
		}
		d.decoration(l[1:end])
		l = l[end+1:]
	}
	d.msg = bytes.TrimPrefix(l, []byte{' '})
	return d, true
}

// decoration classifies one decoration by its form; unknown ones
// (uptime, hostname, pid, tid) are ignored. Tags come last, so a later
// tag-like field replaces an earlier one (a hostname).
func (d *decorated) decoration(f []byte) {
	s := strings.TrimSpace(string(f))
	switch {
	case len(s) == len(isoLayout) && s[4] == '-' && s[10] == 'T':
		t, err := time.Parse(isoLayout, s)
		if err == nil && t.Year() >= 1970 && t.Year() < 2262 {
			d.wall, d.hasWall = t.UnixNano(), true
		}
	case strings.HasSuffix(s, "ns"):
		if v, ok := digits(s[:len(s)-2]); ok {
			d.counter, d.hasCounter = v, true
		}
	case strings.HasSuffix(s, "ms"):
		if v, ok := digits(s[:len(s)-2]); ok && v >= minWallMillis && v < math.MaxInt64/1_000_000 {
			d.wall, d.hasWall = v*1e6, true
		}
	case isLevel(s):
	case isTags(s):
		d.tags = s
	}
}

// digits parses a non-negative decimal int64 of digits only.
func digits(s string) (int64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

func isLevel(s string) bool {
	switch s {
	case "trace", "debug", "info", "warning", "error":
		return true
	}
	return false
}

// isTags: a tag set as the tags decoration prints it, "gc,heap" (not a
// pid or tid decoration, "1234p").
func isTags(s string) bool {
	if s == "" || len(s) > 200 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == ',') {
			return false
		}
	}
	return true
}

// safepointLine is a safepoint's statistics line, written at its end.
type safepointLine struct {
	name  string // the VM operation; "" for JDK 11's lines, which lack it
	total int64  // ns from the start of synchronisation to the end
	reach int64  // ns spent bringing the threads to the safepoint; -1 unknown
}

// maxPauseNs bounds the durations a line may give: a pause of more than
// a day is a damaged or crafted line.
const maxPauseNs = int64(24 * time.Hour)

// maxName bounds names and causes taken from a line.
const maxName = 200

// parseSafepoint reads JDK 13+'s
//
//	Safepoint "G1CollectFull", Time since last: 768315074 ns, Reaching safepoint: 14636 ns, Cleanup: 23501 ns, At safepoint: 35512935 ns, Total: 35551072 ns
//
// and JDK 11/12's
//
//	Total time for which application threads were stopped: 0.0002411 seconds, Stopping threads took: 0.0000330 seconds
//
// ok is false for any other message; bad for one that starts like these
// but does not parse.
func parseSafepoint(msg []byte) (s safepointLine, ok, bad bool) {
	const jdk11 = "Total time for which application threads were stopped: "
	m := string(msg)
	if rest, found := strings.CutPrefix(m, jdk11); found {
		s, bad = parseJDK11Safepoint(rest)
		return s, !bad, bad
	}
	rest, found := strings.CutPrefix(m, `Safepoint "`)
	if !found {
		return s, false, false
	}
	name, rest, found := strings.Cut(rest, `", `)
	if !found || !cleanName(name) {
		return s, false, true
	}
	s = safepointLine{name: name, total: -1, reach: -1}
	for _, kv := range strings.Split(rest, ", ") {
		k, v, found := strings.Cut(kv, ": ")
		if !found {
			return s, false, true
		}
		ns, found := strings.CutSuffix(v, " ns")
		n, okN := digits(ns)
		if !found || !okN || n > maxPauseNs {
			return s, false, true
		}
		switch k {
		case "Total":
			s.total = n
		case "Reaching safepoint":
			s.reach = n
		}
	}
	if s.total < 0 || s.reach > s.total {
		return s, false, true
	}
	return s, true, false
}

func parseJDK11Safepoint(rest string) (s safepointLine, bad bool) {
	total, rest, found := strings.Cut(rest, " seconds, Stopping threads took: ")
	reach, found2 := strings.CutSuffix(rest, " seconds")
	t, okT := seconds(total)
	r, okR := seconds(reach)
	if !found || !found2 || !okT || !okR || r > t {
		return s, true
	}
	return safepointLine{total: t, reach: r}, false
}

// seconds parses "0.0002411" (seconds) into ns, within maxPauseNs.
func seconds(s string) (int64, bool) {
	return decimal(s, 1e9)
}

// decimal parses a non-negative decimal number of digits and at most one
// '.', times unit, rounded to an int64 no larger than maxPauseNs.
func decimal(s string, unit float64) (int64, bool) {
	if s == "" || len(s) > 24 || strings.Count(s, ".") > 1 || s[0] == '.' || s[len(s)-1] == '.' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '.' {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f*unit > float64(maxPauseNs) {
		return 0, false
	}
	return int64(math.Round(f * unit)), true
}

// cleanName: printable ASCII, not too long (a VM operation, a GC cause).
func cleanName(s string) bool {
	if s == "" || len(s) > maxName {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// gcLine is a GC pause line, written at the pause's end.
type gcLine struct {
	name, cause string
	dur         int64 // ns
}

// parseGC reads a GC pause line of the gc tag:
//
//	GC(3) Pause Young (Normal) (G1 Evacuation Pause) 24M->3M(256M) 3.456ms
//	GC(16) Pause Full (Diagnostic Command) 179M->157M(265M) 35.257ms
//	GC(80) Pause Remark 164M->164M(344M) 3.508ms
//	GC(2) Pause Init Mark (unload classes) 0.231ms
//
// ok is false for other gc lines (Using G1, Concurrent Mark Cycle, a
// pause's start line without a duration); bad for a "GC(N) Pause" line
// that does not parse.
func parseGC(msg []byte) (g gcLine, ok, bad bool) {
	m := string(msg)
	rest, found := strings.CutPrefix(m, "GC(")
	if !found {
		return g, false, false
	}
	id, rest, found := strings.Cut(rest, ") ")
	if _, okID := digits(id); !found || !okID || !strings.HasPrefix(rest, "Pause ") {
		return g, false, false
	}
	i := strings.LastIndexByte(rest, ' ')
	ms, found := strings.CutSuffix(rest[i+1:], "ms")
	if !found {
		return g, false, false // the start line of a pause: "GC(16) Pause Full (Diagnostic Command)"
	}
	dur, okD := decimal(ms, 1e6)
	if !okD {
		return g, false, true
	}
	desc := rest[:i]
	// The heap's occupancy before and after, 24M->3M(256M), when given.
	if j := strings.LastIndexByte(desc, ' '); j > 0 && strings.Contains(desc[j+1:], "->") {
		desc = desc[:j]
	}
	name, cause, okN := splitCause(desc)
	if !okN {
		return g, false, true
	}
	return gcLine{name: name, cause: cause, dur: dur}, true, false
}

// g1YoungTypes are the kinds of G1 young pause, which G1 prints in
// parentheses before the cause.
var g1YoungTypes = map[string]bool{"Normal": true, "Concurrent Start": true, "Prepare Mixed": true, "Mixed": true, "Initial Mark": true}

// splitCause splits "Pause Young (Normal) (G1 Evacuation Pause)" into the
// pause, "Pause Young (Normal)", and its cause, "G1 Evacuation Pause";
// "Pause Full (System.gc())" into "Pause Full" and "System.gc()". Only
// young and full pauses carry a cause; other pauses ("Pause Remark",
// "Pause Init Mark (unload classes)") are named as printed.
func splitCause(desc string) (name, cause string, ok bool) {
	if !cleanName(desc) {
		return "", "", false
	}
	base, groups, ok := trailingGroups(desc)
	if !ok || (base != "Pause Young" && base != "Pause Full") || len(groups) == 0 {
		return desc, "", true
	}
	last := groups[len(groups)-1]
	if len(groups) == 1 && base == "Pause Young" && g1YoungTypes[last] {
		return desc, "", true
	}
	name = base
	for _, g := range groups[:len(groups)-1] {
		name += " (" + g + ")"
	}
	return name, last, true
}

// trailingGroups splits "A (b) (c(d))" into "A" and ["b", "c(d)"]:
// balanced parenthesised groups at the end, at most 4.
func trailingGroups(s string) (base string, groups []string, ok bool) {
	for len(groups) < 4 && strings.HasSuffix(s, ")") {
		depth, open := 0, -1
		for i := len(s) - 1; i >= 0 && open < 0; i-- {
			switch s[i] {
			case ')':
				depth++
			case '(':
				if depth--; depth == 0 {
					open = i
				}
			}
		}
		if open <= 0 || s[open-1] != ' ' {
			return "", nil, false
		}
		groups = append([]string{s[open+1 : len(s)-1]}, groups...)
		s = s[:open-1]
	}
	return s, groups, true
}
