package slowdisk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/safefile"
)

// MaxProfileFile bounds a profile file: a profile is a few hundred bytes,
// an iotrace device summary a line per device and kind.
const MaxProfileFile = 1 << 20

// ErrBadProfile is wrapped by every refusal of a profile file's content.
var ErrBadProfile = errors.New("bad device profile")

// Resolve returns the profile spec names: a named profile (Names), else
// the file at spec, or spec as FILE#DEV to take device DEV
// ("major:minor") of an iotrace summary that has several.
func Resolve(spec string) (Profile, error) {
	if p, ok := Named(spec); ok {
		return p, nil
	}
	path, dev := spec, ""
	if i := strings.LastIndexByte(spec, '#'); i >= 0 {
		path, dev = spec[:i], spec[i+1:]
	}
	b, err := safefile.ReadAll(path, MaxProfileFile)
	if err != nil {
		return Profile{}, fmt.Errorf("device profile %q (not one of %s): %w", spec, namesList(), err)
	}
	return Parse(path, dev, b)
}

// Parse reads a profile file's content: the JSON of ProfileJSON, or the
// JSON Lines of `kscope iotrace --summary --format json` (its block
// request kinds; dev picks a device when there are several). Errors name
// path and the line and column of what is wrong, and wrap ErrBadProfile.
func Parse(path, dev string, b []byte) (Profile, error) {
	if isIotraceSummary(b) {
		return parseIotrace(path, dev, b)
	}
	if dev != "" {
		return Profile{}, fmt.Errorf("%s: %w: #%s picks a device of an iotrace summary, and this is not one", path, ErrBadProfile, output.Escape(dev))
	}
	return parseJSON(path, b)
}

// ProfileJSON is a profile file:
//
//	{"name": "my-volume", "source": "prod broker 3, 2026-11-20",
//	 "max_inflight": 32,
//	 "read":  {"min_ms": 0.1, "percentiles": [{"p": 50, "ms": 1}, {"p": 99, "ms": 8}, {"p": 100, "ms": 30}]},
//	 "write": {...}, "flush": {...}}
type ProfileJSON struct {
	Name        string    `json:"name"`
	Source      string    `json:"source"`
	MaxInflight int       `json:"max_inflight"`
	Read        *DistJSON `json:"read"`
	Write       *DistJSON `json:"write"`
	Flush       *DistJSON `json:"flush"`
}

// DistJSON is one request kind's distribution in a profile file.
type DistJSON struct {
	MinMs       float64     `json:"min_ms"`
	Percentiles []PointJSON `json:"percentiles"`
}

// PointJSON is a percentile (0 < p <= 100) and its latency in ms.
type PointJSON struct {
	P  float64 `json:"p"`
	Ms float64 `json:"ms"`
}

func parseJSON(path string, b []byte) (Profile, error) {
	var pj ProfileJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pj); err != nil {
		return Profile{}, jsonError(path, b, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Profile{}, fmt.Errorf("%s:%s: %w: more after the profile's object", path, lineCol(b, dec.InputOffset()), ErrBadProfile)
	}
	p := Profile{Name: pj.Name, Source: pj.Source, MaxInflight: pj.MaxInflight}
	if p.Name == "" {
		p.Name = path
	}
	for op := range numOps {
		dj := map[Op]*DistJSON{OpRead: pj.Read, OpWrite: pj.Write, OpFlush: pj.Flush}[op]
		if dj == nil {
			return Profile{}, fmt.Errorf("%s:%s: %w: no %q distribution", path, lineCol(b, 0), ErrBadProfile, op.String())
		}
		if err := dj.to(p.Dist(op)); err != nil {
			at := locate(b, distPath(op, err)...)
			return Profile{}, fmt.Errorf("%s:%s: %w: %s: %s", path, lineCol(b, at), ErrBadProfile, op, err)
		}
	}
	if err := p.Validate(); err != nil {
		return Profile{}, fmt.Errorf("%s:%s: %w: %w", path, lineCol(b, locateValidation(b, err)), ErrBadProfile, err)
	}
	return p, nil
}

// pointError is a value of a distribution that is not a latency; field
// is where it is: "min_ms" or the index of the percentile.
type pointError struct {
	field any
	msg   string
}

func (e *pointError) Error() string { return e.msg }

// to converts dj into d, refusing values no latency has (NaN cannot come
// from JSON, but an overflow to infinity can be written as 1e999: the
// decoder refuses that itself).
func (dj *DistJSON) to(d *Dist) error {
	if len(dj.Percentiles) > MaxPoints {
		return &pointError{"percentiles", fmt.Sprintf("%d percentiles: at most %d", len(dj.Percentiles), MaxPoints)}
	}
	min, err := msDuration(dj.MinMs)
	if err != nil {
		return &pointError{"min_ms", "min_ms " + err.Error()}
	}
	d.Min, d.Points = min, make([]Point, 0, len(dj.Percentiles))
	for i, pj := range dj.Percentiles {
		if math.IsNaN(pj.P) || pj.P <= 0 || pj.P > 100 {
			return &pointError{i, fmt.Sprintf("percentile %g: want more than 0 and at most 100", pj.P)}
		}
		l, err := msDuration(pj.Ms)
		if err != nil {
			return &pointError{i, fmt.Sprintf("p%g: %v", pj.P, err)}
		}
		if i > 0 && pj.P <= dj.Percentiles[i-1].P {
			return &pointError{i, fmt.Sprintf("p%g after p%g: percentiles must increase", pj.P, dj.Percentiles[i-1].P)}
		}
		if l < d.Min || (i > 0 && l < d.Points[i-1].Latency) {
			return &pointError{i, fmt.Sprintf("p%g %g ms is less than the latency before it: latencies must not decrease", pj.P, pj.Ms)}
		}
		d.Points = append(d.Points, Point{Q: pj.P / 100, Latency: l})
	}
	if len(d.Points) == 0 {
		return &pointError{"percentiles", "no percentiles"}
	}
	return nil
}

// distPath is the JSON path of what a pointError from op's distribution
// is about.
func distPath(op Op, err error) []any {
	var pe *pointError
	if !errors.As(err, &pe) {
		return []any{op.String()}
	}
	if i, ok := pe.field.(int); ok {
		return []any{op.String(), "percentiles", i}
	}
	return []any{op.String(), pe.field}
}

// msDuration converts a latency in ms, refusing negative and absurd ones.
func msDuration(v float64) (time.Duration, error) {
	if math.IsNaN(v) || v < 0 || v > float64(MaxLatency/time.Millisecond) {
		return 0, fmt.Errorf("%g ms: want 0..%v", v, MaxLatency)
	}
	return time.Duration(v * float64(time.Millisecond)), nil
}

// locateValidation finds what Validate refused (only max_inflight is
// left by then: the distributions were checked while converted).
func locateValidation(b []byte, err error) int64 {
	if strings.HasPrefix(err.Error(), "max_inflight") {
		return locate(b, "max_inflight")
	}
	return 0
}

// jsonError places a decoding error at its line and column.
func jsonError(path string, b []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset counts the bytes read, the offending one included.
		return fmt.Errorf("%s:%s: %w: %v", path, lineCol(b, se.Offset-1), ErrBadProfile, se)
	case errors.As(err, &te):
		return fmt.Errorf("%s:%s: %w: %s: a %s where a %s belongs", path, lineCol(b, te.Offset), ErrBadProfile, te.Field, te.Value, te.Type)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s:%s: %w: the file ends inside the profile (or is empty)", path, lineCol(b, int64(len(b))), ErrBadProfile)
	}
	// Unknown fields: the decoder gives no offset; find the name.
	msg := err.Error()
	at := int64(0)
	if i := strings.Index(msg, "unknown field "); i >= 0 {
		name := strings.Trim(msg[i+len("unknown field "):], `"`)
		at = int64(bytes.Index(b, []byte(`"`+name+`"`)))
	}
	return fmt.Errorf("%s:%s: %w: %v", path, lineCol(b, max(at, 0)), ErrBadProfile, err)
}

// lineCol is "LINE:COL" (from 1) of byte offset off in b.
func lineCol(b []byte, off int64) string {
	off = min(max(off, 0), int64(len(b)))
	line := bytes.Count(b[:off], []byte("\n")) + 1
	col := off - int64(bytes.LastIndexByte(b[:off], '\n'))
	return fmt.Sprintf("%d:%d", line, col)
}

// locate returns the offset of the value at path (object keys, array
// indexes) in the JSON document b, or 0 when it is not found.
func locate(b []byte, path ...any) int64 {
	dec := json.NewDecoder(bytes.NewReader(b))
	var stack []any // the current path: keys and indexes
	var inArray []bool
	expectKey := false
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return 0
		}
		if !expectKey && pathEqual(stack, path) {
			return skipSpaceAndComma(b, start)
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack, inArray, expectKey = append(stack, ""), append(inArray, false), true
				continue
			case '[':
				stack, inArray = append(stack, 0), append(inArray, true)
				continue
			case '}', ']':
				stack, inArray, expectKey = stack[:len(stack)-1], inArray[:len(inArray)-1], false
			}
		default:
			if expectKey {
				stack[len(stack)-1] = t.(string)
				expectKey = false
				continue
			}
		}
		// A value ended: next is a key (object) or the next index.
		if n := len(stack); n > 0 {
			if inArray[n-1] {
				stack[n-1] = stack[n-1].(int) + 1
			} else {
				expectKey = true
			}
		}
	}
}

func pathEqual(stack, path []any) bool {
	if len(stack) != len(path) {
		return false
	}
	for i := range stack {
		if stack[i] != path[i] {
			return false
		}
	}
	return true
}

// skipSpaceAndComma moves off past what separates values, to the value.
func skipSpaceAndComma(b []byte, off int64) int64 {
	for off < int64(len(b)) && strings.IndexByte(" \t\r\n,:", b[off]) >= 0 {
		off++
	}
	return off
}
