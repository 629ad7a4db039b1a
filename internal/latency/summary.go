// Package latency aggregates request latencies into HdrHistograms per
// group (API, topic) and keeps the slowest requests, for the summaries
// that kscope commands print.
package latency

import (
	"container/heap"
	"sort"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kscope-dev/kscope/internal/event"
)

// Histogram range: 1 µs to 1 hour at 3 significant digits.
const (
	minMicros = 1
	maxMicros = int64(time.Hour / time.Microsecond)
	sigDigits = 3
)

// Group is the latency distribution of one API or topic.
type Group struct {
	Name       string
	Count      int64 // answered requests
	Unanswered int64 // requests without a response (acks=0, or none seen)
	hist       *hdrhistogram.Histogram
}

// NewGroup is an empty distribution named name.
func NewGroup(name string) *Group {
	return &Group{Name: name, hist: hdrhistogram.New(minMicros, maxMicros, sigDigits)}
}

// Record adds an answered request's latency d (clamped to the
// histogram's range: 1 µs to an hour).
func (g *Group) Record(d time.Duration) {
	us := d.Microseconds()
	if us < minMicros {
		us = minMicros
	}
	if us > maxMicros {
		us = maxMicros
	}
	g.hist.RecordValue(us)
	g.Count++
}

// Quantile returns the latency at quantile q (0..100).
func (g *Group) Quantile(q float64) time.Duration {
	return time.Duration(g.hist.ValueAtQuantile(q)) * time.Microsecond
}

// Max returns the largest latency recorded.
func (g *Group) Max() time.Duration { return time.Duration(g.hist.Max()) * time.Microsecond }

// Histogram exposes the underlying histogram (for merging and encoding).
func (g *Group) Histogram() *hdrhistogram.Histogram { return g.hist }

// Summary collects latencies per API and per topic, and the slowest
// requests. Its memory is bounded: histograms are fixed-size and the
// slowest list holds at most Top requests.
type Summary struct {
	Top int
	// ClockSteps counts the answered requests left out: their response
	// is timestamped before them (event.Request.ClockStep), which is no
	// latency.
	ClockSteps  int64
	first, last time.Time
	byAPI       map[string]*Group
	byTopic     map[string]*Group
	slowest     slowHeap
}

// maxGroups bounds the number of topics tracked; the rest go to "(other)".
const maxGroups = 10000

// NewSummary returns a summary that keeps the top slowest requests.
func NewSummary(top int) *Summary {
	return &Summary{Top: top, byAPI: map[string]*Group{}, byTopic: map[string]*Group{}}
}

// Add records one request.
func (s *Summary) Add(r *event.Request) {
	if s.first.IsZero() || r.Arrival.Before(s.first) {
		s.first = r.Arrival
	}
	if r.ClockStep {
		s.ClockSteps++
		return
	}
	if end := r.End; r.Answered && end.After(s.last) {
		s.last = end
	} else if r.Arrival.After(s.last) {
		s.last = r.Arrival
	}
	api := group(s.byAPI, r.API)
	topics := topicsOf(r)
	var tgroups []*Group
	for _, t := range topics {
		tgroups = append(tgroups, group(s.byTopic, t))
	}
	if !r.Answered {
		api.Unanswered++
		for _, g := range tgroups {
			g.Unanswered++
		}
		return
	}
	d := r.Latency()
	api.Record(d)
	for _, g := range tgroups {
		g.Record(d)
	}
	if s.Top > 0 {
		if len(s.slowest) < s.Top {
			heap.Push(&s.slowest, r)
		} else if d > s.slowest[0].Latency() {
			s.slowest[0] = r
			heap.Fix(&s.slowest, 0)
		}
	}
}

func group(m map[string]*Group, name string) *Group {
	g, ok := m[name]
	if !ok {
		if len(m) >= maxGroups {
			name = "(other)"
			if g, ok = m[name]; ok {
				return g
			}
		}
		g = NewGroup(name)
		m[name] = g
	}
	return g
}

// topicsOf returns the distinct topics a request names (by id when the
// name is unknown).
func topicsOf(r *event.Request) []string {
	var out []string
	for i := range r.Partitions {
		t := r.Partitions[i].Topic
		if t == "" {
			t = r.Partitions[i].TopicID
		}
		dup := false
		for _, o := range out {
			if o == t {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, t)
		}
	}
	return out
}

// Span returns the time from the first arrival to the last end seen.
func (s *Summary) Span() time.Duration { return s.last.Sub(s.first) }

// APIs returns the per-API groups, busiest first.
func (s *Summary) APIs() []*Group { return sorted(s.byAPI) }

// Topics returns the per-topic groups, busiest first.
func (s *Summary) Topics() []*Group { return sorted(s.byTopic) }

// Slowest returns the slowest requests, slowest first.
func (s *Summary) Slowest() []*event.Request {
	out := append([]*event.Request(nil), s.slowest...)
	sort.Slice(out, func(i, j int) bool { return out[i].Latency() > out[j].Latency() })
	return out
}

func sorted(m map[string]*Group) []*Group {
	out := make([]*Group, 0, len(m))
	for _, g := range m {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := out[i].Count+out[i].Unanswered, out[j].Count+out[j].Unanswered; a != b {
			return a > b
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// slowHeap is a min-heap on latency: its root is the fastest of the
// slowest requests kept.
type slowHeap []*event.Request

func (h slowHeap) Len() int           { return len(h) }
func (h slowHeap) Less(i, j int) bool { return h[i].Latency() < h[j].Latency() }
func (h slowHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *slowHeap) Push(x any)        { *h = append(*h, x.(*event.Request)) }
func (h *slowHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
