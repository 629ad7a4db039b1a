package slowdisk

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// MaxLatency bounds every latency of a profile: a device that takes
// longer than this for one request is not a slow device but a hung one
// (and the kernel's hung-task warnings start at 120 s).
const MaxLatency = 60 * time.Second

// MaxPoints bounds the percentile points of one distribution.
const MaxPoints = 64

// Op is the kind of a device request a profile times.
type Op int

const (
	OpRead Op = iota
	OpWrite
	OpFlush
	numOps
)

func (o Op) String() string {
	switch o {
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	case OpFlush:
		return "flush"
	}
	return fmt.Sprintf("op%d", int(o))
}

// Point says that a share Q (0 < Q <= 1) of requests take at most
// Latency.
type Point struct {
	Q       float64
	Latency time.Duration
}

// Dist is a latency distribution given by its quantiles, sorted by Q and
// by latency; between two points latencies are spread evenly (linear
// interpolation of the inverse CDF), below the first point from Min.
// Draws above the last point's Q take its latency (a last point at Q 1 is
// the maximum).
type Dist struct {
	Min    time.Duration
	Points []Point
}

// Profile is a device's latency per kind of request.
type Profile struct {
	// Name says which profile it is (a named one, or the file's path).
	Name string
	// Source says where its figures come from.
	Source string
	Read   Dist
	Write  Dist
	Flush  Dist
	// MaxInflight bounds the requests held at once, like a device's queue
	// depth: a request over it waits for one to finish first (0:
	// DefaultMaxInflight).
	MaxInflight int
}

// DefaultMaxInflight is a profile's queue depth when it gives none.
const DefaultMaxInflight = 32

// Dist returns the distribution of op.
func (p *Profile) Dist(op Op) *Dist {
	switch op {
	case OpRead:
		return &p.Read
	case OpWrite:
		return &p.Write
	}
	return &p.Flush
}

// Validate refuses what no device does: no points, a share outside
// (0, 1], unsorted points, negative, NaN or absurd (over MaxLatency)
// latencies, a queue depth outside 1..1024.
func (p *Profile) Validate() error {
	for op := range numOps {
		if err := p.Dist(op).validate(); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	if p.MaxInflight < 0 || p.MaxInflight > 1024 {
		return fmt.Errorf("max_inflight %d: want 1..1024 (0: %d)", p.MaxInflight, DefaultMaxInflight)
	}
	return nil
}

func (d *Dist) validate() error {
	if len(d.Points) == 0 {
		return errors.New("no percentiles")
	}
	if len(d.Points) > MaxPoints {
		return fmt.Errorf("%d percentiles: at most %d", len(d.Points), MaxPoints)
	}
	if err := checkLatency("min", d.Min); err != nil {
		return err
	}
	prevQ, prevL := 0.0, d.Min
	for _, pt := range d.Points {
		name := fmt.Sprintf("p%g", pt.Q*100)
		if math.IsNaN(pt.Q) || pt.Q <= 0 || pt.Q > 1 {
			return fmt.Errorf("percentile %g: want more than 0 and at most 100", pt.Q*100)
		}
		if err := checkLatency(name, pt.Latency); err != nil {
			return err
		}
		if pt.Q <= prevQ {
			return fmt.Errorf("%s: percentiles must increase", name)
		}
		if pt.Latency < prevL {
			return fmt.Errorf("%s %v is less than the one before (%v): latencies must not decrease", name, pt.Latency, prevL)
		}
		prevQ, prevL = pt.Q, pt.Latency
	}
	return nil
}

func checkLatency(name string, d time.Duration) error {
	if d < 0 || d > MaxLatency {
		return fmt.Errorf("%s %v: want 0..%v", name, d, MaxLatency)
	}
	return nil
}

// Quantile is the latency below which a share q of draws fall.
func (d *Dist) Quantile(q float64) time.Duration {
	lo, loL := 0.0, d.Min
	for _, pt := range d.Points {
		if q <= pt.Q {
			frac := (q - lo) / (pt.Q - lo)
			return loL + time.Duration(frac*float64(pt.Latency-loL))
		}
		lo, loL = pt.Q, pt.Latency
	}
	return loL
}

// Draw is a latency drawn from d with rng.
func (d *Dist) Draw(rng *rand.Rand) time.Duration { return d.Quantile(rng.Float64()) }

// Quantiles are the latencies at each q, for reports and tests.
func (d *Dist) Quantiles(qs ...float64) []time.Duration {
	out := make([]time.Duration, len(qs))
	for i, q := range qs {
		out[i] = d.Quantile(q)
	}
	return out
}
