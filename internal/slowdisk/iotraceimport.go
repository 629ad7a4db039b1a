package slowdisk

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/output"
)

// deviceSummaryLine is a line of `kscope iotrace --summary --format json`
// (internal/iotrace/ioout's deviceSummaryJSON): per device and kind, the
// count and the upper edges of the log2 slots the quantiles fall in. A
// copy of the writer's type, not an import: ioout imports iotrace, whose
// tests import lab, which imports this package.
type deviceSummaryLine struct {
	Dev    string   `json:"dev"`
	Kind   string   `json:"kind"`
	Count  uint64   `json:"count"`
	Bytes  uint64   `json:"bytes"`
	MeanMs *float64 `json:"mean_ms"`
	P50Ms  *float64 `json:"p50_le_ms"`
	P99Ms  *float64 `json:"p99_le_ms"`
	P999Ms *float64 `json:"p99_9_le_ms"`
	MaxMs  *float64 `json:"max_le_ms"`
}

// slotMiddle turns a log2 slot's upper edge into the middle of the slot
// [edge/2, edge): the summary says only which slot a quantile is in, and
// replaying the edge would make every latency up to twice too long.
const slotMiddle = 0.75

// isIotraceSummary reports whether b's first line is an iotrace device
// summary line (an object with "dev" and "kind").
func isIotraceSummary(b []byte) bool {
	line, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	var probe map[string]json.RawMessage
	if json.Unmarshal(line, &probe) != nil {
		return false
	}
	_, dev := probe["dev"]
	_, kind := probe["kind"]
	return dev && kind
}

var devPattern = regexp.MustCompile(`^[0-9]{1,10}:[0-9]{1,10}$`)

var blockKinds = map[string]Op{"blk-read": OpRead, "blk-write": OpWrite, "blk-flush": OpFlush}

// parseIotrace builds a profile from the block request kinds of one
// device of an iotrace device summary. A kind the device had none of
// takes the write distribution (a production broker may read nothing
// from disk); the Source says so.
func parseIotrace(path, dev string, b []byte) (Profile, error) {
	byDev, err := readSummaryLines(path, b)
	if err != nil {
		return Profile{}, err
	}
	if dev == "" {
		if len(byDev) != 1 {
			return Profile{}, fmt.Errorf("%s: %w: block requests of %d devices (%s): pick one as %s#DEV", path, ErrBadProfile,
				len(byDev), strings.Join(sortedKeys(byDev), ", "), path)
		}
		dev = sortedKeys(byDev)[0]
	}
	lines, ok := byDev[dev]
	if !ok {
		return Profile{}, fmt.Errorf("%s: %w: no block requests of device %s (it has %s)", path, ErrBadProfile, output.Escape(dev), strings.Join(sortedKeys(byDev), ", "))
	}
	p := Profile{Name: path + "#" + dev, Source: fmt.Sprintf("kscope iotrace summary %s, device %s (slot middles of the log2 histograms)", path, dev)}
	for op := range numOps {
		if l, ok := lines[op]; ok {
			*p.Dist(op) = l
		}
	}
	if len(p.Write.Points) == 0 {
		return Profile{}, fmt.Errorf("%s: %w: device %s has no blk-write line", path, ErrBadProfile, dev)
	}
	for _, op := range []Op{OpRead, OpFlush} {
		if len(p.Dist(op).Points) == 0 {
			*p.Dist(op) = p.Write
			p.Source += "; no " + op.String() + "s: the write distribution stands in"
		}
	}
	return p, p.Validate()
}

// readSummaryLines reads every line, keeping block request kinds with a
// count, by device and kind.
func readSummaryLines(path string, b []byte) (map[string]map[Op]Dist, error) {
	byDev := map[string]map[Op]Dist{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), MaxProfileFile)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l deviceSummaryLine
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("%s:%d: %w: not an iotrace summary line: %v", path, n, ErrBadProfile, err)
		}
		op, ok := blockKinds[l.Kind]
		if !ok || l.Count == 0 {
			continue
		}
		if !devPattern.MatchString(l.Dev) {
			return nil, fmt.Errorf("%s:%d: %w: device %s: want MAJOR:MINOR", path, n, ErrBadProfile, output.Escape(l.Dev))
		}
		d, err := l.dist()
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w: %s %s: %v", path, n, ErrBadProfile, l.Dev, l.Kind, err)
		}
		if byDev[l.Dev] == nil {
			if len(byDev) >= 64 {
				return nil, fmt.Errorf("%s:%d: %w: more than 64 devices", path, n, ErrBadProfile)
			}
			byDev[l.Dev] = map[Op]Dist{}
		}
		if _, dup := byDev[l.Dev][op]; dup {
			return nil, fmt.Errorf("%s:%d: %w: a second %s line for device %s", path, n, ErrBadProfile, l.Kind, l.Dev)
		}
		byDev[l.Dev][op] = d
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrBadProfile, err)
	}
	if len(byDev) == 0 {
		return nil, fmt.Errorf("%s: %w: no blk-read, blk-write or blk-flush line with requests", path, ErrBadProfile)
	}
	return byDev, nil
}

// dist turns a line's quantile slot edges into a distribution.
func (l *deviceSummaryLine) dist() (Dist, error) {
	qs := []struct {
		q  float64
		ms *float64
	}{{0.5, l.P50Ms}, {0.99, l.P99Ms}, {0.999, l.P999Ms}, {1, l.MaxMs}}
	var d Dist
	for _, q := range qs {
		if q.ms == nil {
			return Dist{}, fmt.Errorf("no p%g", q.q*100)
		}
		v := *q.ms
		if math.IsNaN(v) || v < 0 || v > float64(MaxLatency/time.Millisecond) {
			return Dist{}, fmt.Errorf("p%g %g ms: want 0..%v", q.q*100, v, MaxLatency)
		}
		lat := time.Duration(v * slotMiddle * float64(time.Millisecond))
		if n := len(d.Points); n > 0 && lat < d.Points[n-1].Latency {
			return Dist{}, fmt.Errorf("p%g %g ms is less than the quantile before it", q.q*100, v)
		}
		d.Points = append(d.Points, Point{Q: q.q, Latency: lat})
	}
	return d, d.validate()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
