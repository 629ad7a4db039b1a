package metrics

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kscope-dev/kscope/internal/event"
)

// step is one event of a stream: a request, a write, or (neither) a
// rerank.
type step struct {
	req   *event.Request
	write *event.Write
}

var rerank = step{}

// driftStream is a mixed stream whose heavy topics, partitions and clients
// move every phase, with a rerank after each: values move in and out of
// the named set. It has produce (some acks=0) and fetch requests (some by
// topic id), requests without topics, unknown API keys, error codes at
// both levels, partitions without a topic, label values to clean, a
// client and a topic called "other", and traced writes.
func driftStream(seed uint64, phases, perPhase, topics, partitions, clients int) []step {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	topic := func(i int) string {
		switch i {
		case 0:
			return Other
		case 1:
			return "ctl\x01topic"
		}
		return fmt.Sprintf("topic-%d", i)
	}
	client := func(i int) string {
		switch i {
		case 0:
			return Other
		case 1:
			return "bad\xffclient"
		}
		return fmt.Sprintf("client-%d", i)
	}
	// pick is i with weight 1, except the phase's hot one (weight 20).
	pick := func(n, hot int) int {
		if rng.IntN(3) == 0 {
			return hot % n
		}
		return rng.IntN(n)
	}
	var out []step
	for ph := range phases {
		hotTopic, hotPart, hotClient := ph*3+2, ph*5+1, ph*7+3
		for range perPhase {
			ts := pick(topics, hotTopic)
			part := func() event.Partition {
				tn := pick(topics, hotTopic)
				p := event.Partition{Topic: topic(tn), Partition: int32(pick(partitions, hotPart)),
					Records: rng.IntN(20), Bytes: rng.IntN(5000)}
				switch rng.IntN(40) {
				case 0:
					p.Topic = "" // neither name nor id
				case 1, 2:
					p.Topic, p.TopicID = "", fmt.Sprintf("id-of-%d", tn)
				}
				if rng.IntN(100) == 0 {
					p.Partition = -1 // not indexed
				}
				if rng.IntN(15) == 0 {
					p.ErrorCode = []int16{6, 3, 999, -1}[rng.IntN(4)]
				}
				return p
			}
			if rng.IntN(4) == 0 {
				out = append(out, step{write: &event.Write{Start: t0, End: t0.Add(time.Duration(rng.IntN(5000)) * time.Microsecond),
					Op: []string{"write", "fsync", "pwrite64"}[rng.IntN(3)], Topic: topic(ts),
					Partition: int32(pick(partitions, hotPart)), Bytes: int64(rng.IntN(3) * rng.IntN(8000)),
					Error: []string{"", "", "", "", "EIO"}[rng.IntN(5)]}})
				continue
			}
			r := &event.Request{Arrival: t0, ClientID: client(pick(clients, hotClient)), RequestBytes: 50 + rng.IntN(3000)}
			switch x := rng.IntN(20); {
			case x < 10:
				r.API, r.APIKey = "Produce", 0
				for range 1 + rng.IntN(4) {
					r.Partitions = append(r.Partitions, part())
				}
				if rng.IntN(8) == 0 {
					r.Acks = new(int16)
				}
			case x < 16:
				r.API, r.APIKey = "Fetch", 1
				for range rng.IntN(5) {
					r.Partitions = append(r.Partitions, part())
				}
			case x < 19:
				r.API, r.APIKey = []string{"Metadata", "Heartbeat", "JoinGroup"}[x-16], []int16{3, 12, 11}[x-16]
			default:
				r.API, r.APIKey = fmt.Sprintf("unknown(%d)", 200+rng.IntN(3)), int16(200+rng.IntN(3))
			}
			if rng.IntN(12) == 0 {
				r.ErrorCode = new([]int16{0, 27, 25, 5000}[rng.IntN(4)])
			}
			if r.Acks == nil && rng.IntN(30) != 0 {
				r.End = t0.Add(time.Duration(1+rng.IntN(40000)) * time.Microsecond)
				r.ResponseBytes = 20 + rng.IntN(9000)
			}
			out = append(out, step{req: r})
		}
		out = append(out, rerank)
	}
	return out
}

// movesStream moves one topic, one partition and one client out of the
// named set and back in (top 2 of each), with requests before and after
// each rerank.
func movesStream() []step {
	produce := func(client string, lat time.Duration, parts ...event.Partition) step {
		return step{req: req("Produce", client, lat, 100, 20, parts...)}
	}
	write := func(topic string, p int32, bytes int64) step {
		return step{write: &event.Write{Start: t0, End: t0.Add(time.Millisecond), Op: "write", Topic: topic, Partition: p, Bytes: bytes}}
	}
	var out []step
	repeat := func(n int, st ...step) {
		for range n {
			out = append(out, st...)
		}
	}
	// a, b named (first seen); c other. Partitions a/0, a/1 named.
	repeat(2, produce("x", time.Millisecond, part("a", 0, 1, 10), part("a", 1, 1, 10)),
		produce("y", 2*time.Millisecond, part("b", 0, 1, 10)), produce("z", 3*time.Millisecond, part("c", 0, 1, 10)),
		write("a", 0, 10), write("c", 0, 10))
	// c and z take the traffic: b and y are demoted, a/1 too (a/2 leads).
	repeat(5, produce("z", time.Millisecond, part("c", 0, 5, 5000), part("a", 2, 5, 5000)), write("a", 2, 5000))
	out = append(out, rerank)
	repeat(2, produce("x", time.Millisecond, part("a", 0, 1, 10), part("a", 1, 1, 10)),
		produce("y", 2*time.Millisecond, part("b", 0, 1, 10)), produce("z", 3*time.Millisecond, part("c", 0, 1, 10)),
		write("a", 1, 10), write("b", 0, 10))
	// b and y come back, and a/1.
	repeat(20, produce("y", time.Millisecond, part("b", 0, 5, 50000), part("a", 1, 5, 50000)), write("a", 1, 90000))
	out = append(out, rerank)
	repeat(2, produce("x", time.Millisecond, part("a", 0, 1, 10), part("a", 1, 1, 10)),
		produce("y", 2*time.Millisecond, part("b", 0, 1, 10)), produce("z", 3*time.Millisecond, part("c", 0, 1, 10)),
		write("a", 1, 10), write("b", 0, 10))
	return out
}

// overflowStream has more topics, clients and partitions than the tables
// hold (256 keys each), so that keys are evicted while the cache holds
// their slots (a topic even between its request's two passes), and the
// named topic's partitions reach the partition index's sweep mark.
func overflowStream() []step {
	rng := rand.New(rand.NewPCG(7, 8))
	hotPartition := func() int32 {
		if rng.IntN(10) == 0 {
			return int32(maxIndexedPartition - 20 + rng.IntN(50)) // some not indexed
		}
		return int32(rng.IntN(400))
	}
	var out []step
	for i := range 3000 {
		hot := fmt.Sprintf("hot%d", i/1500) // the hot topic changes once
		r := req("Produce", fmt.Sprintf("c%d", rng.IntN(400)), time.Duration(1+rng.IntN(900))*time.Microsecond, 10+rng.IntN(999), 10,
			part(hot, hotPartition(), 1, rng.IntN(1000)),
			part(fmt.Sprintf("t%d", rng.IntN(400)), int32(rng.IntN(3)), 0, 0), // likely evicted by the next topic
			part(fmt.Sprintf("t%d", rng.IntN(400)), int32(rng.IntN(3)), 1, rng.IntN(1000)),
			part(hot, hotPartition(), 1, rng.IntN(1000)))
		out = append(out, step{req: r})
		if i%3 == 0 {
			out = append(out, step{write: &event.Write{Start: t0, End: t0.Add(time.Millisecond), Op: "write", Topic: hot,
				Partition: int32(rng.IntN(400)), Bytes: int64(rng.IntN(5000))}})
		}
		if i%500 == 499 {
			out = append(out, rerank)
		}
	}
	return out
}

// TestCacheMatchesReference: Set, with its series cache, exports the same
// series with the same values as the code before the cache (refSet) for
// the same events, at every rerank and at the end: a cache that served a
// series a rerank deleted, or a label a rerank changed, differs.
func TestCacheMatchesReference(t *testing.T) {
	small := Options{TopTopics: 2, TopClients: 2, TopPartitions: 3}
	tests := []struct {
		name   string
		opts   Options
		stream []step
	}{
		{"defaults", Options{}, driftStream(1, 4, 600, 12, 6, 10)},
		{"partition label", Options{PartitionLabel: true}, driftStream(2, 4, 600, 12, 6, 10)},
		{"small tops", small, driftStream(3, 8, 400, 10, 5, 9)},
		{"small tops, partition label", Options{TopTopics: 2, TopClients: 2, TopPartitions: 3, PartitionLabel: true},
			driftStream(4, 8, 400, 10, 5, 9)},
		{"small tops, native histograms", Options{TopTopics: 3, TopClients: 2, TopPartitions: 4, PartitionLabel: true,
			NativeHistograms: true}, driftStream(5, 6, 300, 8, 4, 6)},
		{"moves in and out", Options{TopTopics: 2, TopClients: 2, TopPartitions: 2, PartitionLabel: true}, movesStream()},
		{"moves in and out, by topic", Options{TopTopics: 2, TopClients: 2, TopPartitions: 2}, movesStream()},
		{"tables overflow", Options{TopTopics: 1, TopClients: 2, TopPartitions: 5, PartitionLabel: true}, overflowStream()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, reg := newSet(t, tc.opts)
			refReg := prometheus.NewPedanticRegistry()
			ref := newRefSet(refReg, tc.opts)
			reranks := 0
			for i, st := range tc.stream {
				switch {
				case st.req != nil:
					s.Request(st.req)
					ref.Request(st.req)
				case st.write != nil:
					s.Write(st.write)
					ref.Write(st.write)
				default:
					compareSeries(t, fmt.Sprintf("before rerank %d (step %d)", reranks+1, i), reg, refReg)
					compareTables(t, s, ref)
					s.Rerank()
					ref.Rerank()
					reranks++
					compareSeries(t, fmt.Sprintf("after rerank %d (step %d)", reranks, i), reg, refReg)
				}
				if t.Failed() {
					return
				}
			}
			compareSeries(t, "at the end", reg, refReg)
			compareTables(t, s, ref)
			if reranks == 0 {
				t.Fatal("no rerank in the stream")
			}
		})
	}
}

// compareTables fails t when s's top-N tables count or name other keys,
// or other counts, than ref's: the label of every later event depends on
// them.
func compareTables(t *testing.T, s *Set, ref *refSet) {
	t.Helper()
	for _, tb := range []struct {
		name string
		got  *topN
		want *refTopN
	}{{"topics", s.topics, ref.topics}, {"clients", s.clients, ref.clients}, {"partitions", s.partitions, ref.partitions}} {
		if got := countsOf(tb.got); !maps.Equal(got, tb.want.counts) {
			t.Errorf("%s: %d keys counted, reference %d; first different: %s", tb.name, len(got), len(tb.want.counts),
				firstDifferent(got, tb.want.counts))
		}
		got, want := slices.Sorted(maps.Keys(tb.got.named)), slices.Sorted(maps.Keys(tb.want.named))
		if !slices.Equal(got, want) {
			t.Errorf("%s: named %q, reference %q", tb.name, got, want)
		}
		for k, sl := range tb.got.counts {
			if !sl.counted || sl.key != k || sl.named != (tb.got.named[k] == sl) {
				t.Errorf("%s: slot of %q: %+v", tb.name, k, *sl)
			}
		}
	}
}

func firstDifferent(got, want map[string]float64) string {
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok || g != want[k] {
			return fmt.Sprintf("%q: %v (present %v), reference %v", k, g, ok, want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			return fmt.Sprintf("%q: %v, not in the reference", k, got[k])
		}
	}
	return "none"
}

// compareSeries fails t when got's request and write series differ from
// want's, naming the first series that differs.
func compareSeries(t *testing.T, when string, got, want prometheus.Gatherer) {
	t.Helper()
	g, w := seriesLines(t, got), seriesLines(t, want)
	if slices.Equal(g, w) {
		return
	}
	missing, extra := diffLines(w, g), diffLines(g, w)
	t.Errorf("%s: %d series differ from the reference's %d\nmissing or different: %s\nextra or different:   %s",
		when, len(g), len(w), firstLines(missing), firstLines(extra))
}

// seriesLines are one line per series of the families refSet exports:
// name, labels, and value (a histogram's count, sum, classic buckets and
// native buckets), sorted.
func seriesLines(t *testing.T, g prometheus.Gatherer) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	compared := map[string]bool{"kscope_request_duration_seconds": true, "kscope_requests_total": true,
		"kscope_records_total": true, "kscope_record_bytes_total": true, "kscope_request_bytes_total": true,
		"kscope_response_bytes_total": true, "kscope_request_errors_total": true, "kscope_unanswered_requests_total": true,
		"kscope_write_duration_seconds": true, "kscope_write_bytes_total": true, "kscope_write_errors_total": true}
	var lines []string
	for _, mf := range mfs {
		if !compared[mf.GetName()] {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			lines = append(lines, mf.GetName()+"{"+strings.Join(labels, ",")+"} "+metricValue(m))
		}
	}
	slices.Sort(lines)
	return lines
}

func metricValue(m *dto.Metric) string {
	if m.Counter != nil {
		return fmt.Sprint(m.GetCounter().GetValue())
	}
	h := m.GetHistogram()
	var b strings.Builder
	fmt.Fprintf(&b, "count=%d sum=%v buckets=", h.GetSampleCount(), h.GetSampleSum())
	for _, bk := range h.GetBucket() {
		fmt.Fprintf(&b, "%d,", bk.GetCumulativeCount())
	}
	if h.Schema != nil {
		fmt.Fprintf(&b, " schema=%d zero=%v/%d", h.GetSchema(), h.GetZeroThreshold(), h.GetZeroCount())
		for _, sp := range h.GetPositiveSpan() {
			fmt.Fprintf(&b, " span=%d+%d", sp.GetOffset(), sp.GetLength())
		}
		fmt.Fprintf(&b, " deltas=%v", h.GetPositiveDelta())
	}
	return b.String()
}

// diffLines are the lines of a not in b.
func diffLines(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, l := range b {
		in[l] = true
	}
	var out []string
	for _, l := range a {
		if !in[l] {
			out = append(out, l)
		}
	}
	return out
}

func firstLines(ls []string) string {
	if len(ls) > 4 {
		return fmt.Sprintf("%q and %d more", ls[:4], len(ls)-4)
	}
	return fmt.Sprintf("%q", ls)
}

// TestCacheBounded: with many distinct topics, partitions and clients,
// small tops and partition numbers from the wire, only named keys hold
// series, a label value's series are at most one per api and client, a
// topic's partition index stays within maxIndexedPartition, and the error
// and write caches hold no more entries than the series they name.
func TestCacheBounded(t *testing.T) {
	s, _ := newSet(t, Options{TopTopics: 3, TopClients: 2, TopPartitions: 4, PartitionLabel: true})
	rng := rand.New(rand.NewPCG(3, 4))
	indexed := 0
	for i := range 20000 {
		api := []string{"Produce", "Fetch"}[rng.IntN(2)]
		r := req(api, fmt.Sprint("c", rng.IntN(5000)), time.Millisecond, 100, 10,
			part(fmt.Sprint("t", rng.IntN(5)), int32(rng.Int32()), 1, 10), part(fmt.Sprint("t", rng.IntN(5000)), 0, 1, 10),
			part(fmt.Sprint("t", rng.IntN(5)), int32(rng.IntN(3000)), 1, 10))
		r.Partitions[0].ErrorCode = int16(rng.IntN(30000))
		s.Request(r)
		s.Write(&event.Write{Start: t0, End: t0.Add(time.Millisecond), Op: "write", Topic: fmt.Sprint("t", rng.IntN(5)),
			Partition: int32(rng.IntN(100000)), Bytes: 1})
		if i%5000 == 4999 {
			s.Rerank()
		}
		if i%100 != 0 {
			continue
		}
		for _, tb := range []*topN{s.topics, s.clients, s.partitions} {
			for _, m := range []map[string]*slot{tb.counts, tb.named} {
				for k, sl := range m {
					if sl.series == nil {
						continue
					}
					if !sl.named {
						t.Fatalf("event %d: %q holds series, not named", i, k)
					}
					if n := len(sl.series.byAPI); n > 2 {
						t.Fatalf("event %d: %q: series of %d apis", i, k, n)
					}
					for _, as := range sl.series.byAPI {
						if as != nil && len(as.reqs) > s.opts.TopClients+1 {
							t.Fatalf("event %d: %q: request series of %d clients", i, k, len(as.reqs))
						}
					}
					if n := len(sl.series.parts); n > maxIndexedPartition+1 {
						t.Fatalf("event %d: %q: %d partitions indexed", i, k, n)
					}
					indexed = max(indexed, len(sl.series.parts))
				}
			}
		}
		// api (2) × topic (3 named, other, none) × error names (a few dozen, one for unknown codes);
		// topic (3 named, other) × partition (4 named, other) × op (1).
		if c := &s.cache; len(c.errs) > 2*5*150 || len(c.writes) > 4*5 {
			t.Fatalf("event %d: cache %d errors, %d writes", i, len(c.errs), len(c.writes))
		}
	}
	if indexed < maxIndexedPartition/2 {
		t.Fatalf("at most %d partitions indexed", indexed)
	}
}

// TestRepeatRequestAllocs: a request like one seen before allocates
// nothing (its labels, series and scratch space are all reused).
func TestRepeatRequestAllocs(t *testing.T) {
	for _, o := range []Options{{}, {PartitionLabel: true}} {
		s, _ := newSet(t, o)
		r := req("Produce", "app", 2*time.Millisecond, 1000, 60, part("orders", 0, 1, 100), part("orders", 3, 1, 100),
			part("payments", 1, 2, 200))
		r.Partitions[1].ErrorCode = 6
		s.Request(r)
		if n := testing.AllocsPerRun(100, func() { s.Request(r) }); n != 0 {
			t.Errorf("%+v: %v allocations per request", o, n)
		}
	}
}
