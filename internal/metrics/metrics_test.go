package metrics

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kscope-dev/kscope/internal/event"
)

// --- helpers shared by the package's tests ---

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// newSet returns a Set registered with a fresh registry.
func newSet(t testing.TB, o Options) (*Set, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	s, err := New(reg, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s, reg
}

// families gathers reg by family name.
func families(t testing.TB, reg prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func labelMap(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// lookup finds the series of name whose labels are exactly labels.
func lookup(fams map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	for _, m := range fams[name].GetMetric() {
		if maps.Equal(labelMap(m), labels) {
			return m
		}
	}
	return nil
}

// value is a counter's or gauge's value, or a histogram's sample count;
// the test fails when the series does not exist.
func value(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	m := lookup(fams, name, labels)
	if m == nil {
		t.Fatalf("no series %s%v; have %s", name, labels, describe(fams[name]))
	}
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	t.Fatalf("%s%v: unexpected metric type", name, labels)
	return 0
}

// hist is the histogram of a series; the test fails when it does not exist.
func hist(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Histogram {
	t.Helper()
	m := lookup(fams, name, labels)
	if m == nil || m.Histogram == nil {
		t.Fatalf("no histogram %s%v; have %s", name, labels, describe(fams[name]))
	}
	return m.GetHistogram()
}

func describe(mf *dto.MetricFamily) string {
	if mf == nil {
		return "no such family"
	}
	var s []string
	for _, m := range mf.GetMetric() {
		s = append(s, fmt.Sprint(labelMap(m)))
	}
	return strings.Join(s, " ")
}

// labelValues are the distinct values of label in family name.
func labelValues(fams map[string]*dto.MetricFamily, name, label string) []string {
	seen := map[string]bool{}
	for _, m := range fams[name].GetMetric() {
		if v, ok := labelMap(m)[label]; ok {
			seen[v] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// sumOf is the sum of the values (or histogram counts) of every series
// of family name.
func sumOf(fams map[string]*dto.MetricFamily, name string) float64 {
	var sum float64
	for _, m := range fams[name].GetMetric() {
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

func l(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// req is a request that took lat (not answered when lat < 0).
func req(api, client string, lat time.Duration, reqBytes, respBytes int, parts ...event.Partition) *event.Request {
	r := &event.Request{Arrival: t0, API: api, ClientID: client, RequestBytes: reqBytes, ResponseBytes: respBytes,
		Partitions: parts}
	if lat >= 0 {
		r.End = t0.Add(lat)
		r.Answered = true
		r.LatencyMs = float64(lat) / 1e6
	}
	return r
}

func part(topic string, partition int32, records, bytes int) event.Partition {
	return event.Partition{Topic: topic, Partition: partition, Records: records, Bytes: bytes}
}

func i16(v int16) *int16 { return &v }

func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// --- tests ---

func TestLatencyBuckets(t *testing.T) {
	want := []float64{
		0.0001, 0.00015, 0.0002, 0.0003, 0.0005, 0.0007,
		0.001, 0.0015, 0.002, 0.003, 0.005, 0.007,
		0.01, 0.015, 0.02, 0.03, 0.05, 0.07,
		0.1, 0.15, 0.2, 0.3, 0.5, 0.7,
		1, 1.5, 2, 3, 5, 7,
		10, 15, 20, 30,
	}
	if len(LatencyBuckets) != 34 {
		t.Fatalf("%d buckets, want 34: %v", len(LatencyBuckets), LatencyBuckets)
	}
	if !slices.Equal(LatencyBuckets, want) {
		t.Fatalf("buckets\n got %v\nwant %v", LatencyBuckets, want)
	}
	nice := regexp.MustCompile(`^(0\.0*)?(1|1\.5|15|2|3|5|7)0*$`)
	for i, b := range LatencyBuckets {
		if i > 0 && b <= LatencyBuckets[i-1] {
			t.Errorf("bucket %d (%v) not above %v", i, b, LatencyBuckets[i-1])
		}
		if s := strconv.FormatFloat(b, 'g', -1, 64); !nice.MatchString(s) {
			t.Errorf("bucket %d prints as %q", i, s)
		}
	}
}

func TestRequestCounting(t *testing.T) {
	const produce, fetch = "Produce", "Fetch"
	type series struct {
		name   string
		labels map[string]string
		want   float64
	}
	tests := []struct {
		name     string
		opts     Options
		requests []*event.Request
		want     []series
		absent   []series // name and labels that must not exist
		// latency sum of the histogram series want[histIdx] (-1: none)
		histIdx int
		histSum float64
	}{
		{
			name:     "single topic",
			requests: []*event.Request{req(produce, "app1", 2500*time.Microsecond, 1100, 60, part("orders", 0, 10, 1000))},
			want: []series{
				{"kscope_request_duration_seconds", l("api", produce, "topic", "orders"), 1},
				{"kscope_requests_total", l("api", produce, "topic", "orders", "client_id", "app1"), 1},
				{"kscope_records_total", l("api", produce, "topic", "orders", "client_id", "app1"), 10},
				{"kscope_record_bytes_total", l("api", produce, "topic", "orders", "client_id", "app1"), 1000},
				{"kscope_request_bytes_total", l("api", produce, "client_id", "app1"), 1100},
				{"kscope_response_bytes_total", l("api", produce, "client_id", "app1"), 60},
			},
			absent:  []series{{name: "kscope_unanswered_requests_total"}, {name: "kscope_request_errors_total"}},
			histIdx: 0, histSum: 0.0025,
		},
		{
			name: "multi topic: counted once per topic",
			requests: []*event.Request{req(produce, "app1", 4*time.Millisecond, 2000, 90,
				part("orders", 0, 5, 500), part("payments", 0, 2, 200), part("orders", 1, 3, 300))},
			want: []series{
				{"kscope_request_duration_seconds", l("api", produce, "topic", "orders"), 1},
				{"kscope_request_duration_seconds", l("api", produce, "topic", "payments"), 1},
				{"kscope_requests_total", l("api", produce, "topic", "orders", "client_id", "app1"), 1},
				{"kscope_requests_total", l("api", produce, "topic", "payments", "client_id", "app1"), 1},
				{"kscope_records_total", l("api", produce, "topic", "orders", "client_id", "app1"), 8},
				{"kscope_records_total", l("api", produce, "topic", "payments", "client_id", "app1"), 2},
				{"kscope_record_bytes_total", l("api", produce, "topic", "orders", "client_id", "app1"), 800},
				{"kscope_record_bytes_total", l("api", produce, "topic", "payments", "client_id", "app1"), 200},
				{"kscope_request_bytes_total", l("api", produce, "client_id", "app1"), 2000},
			},
			histIdx: 0, histSum: 0.008, // observed once per topic
		},
		{
			name:     "no topic",
			requests: []*event.Request{req("Metadata", "admin", 700*time.Microsecond, 40, 400), req("Metadata", "admin", 300*time.Microsecond, 40, 400)},
			want: []series{
				{"kscope_request_duration_seconds", l("api", "Metadata", "topic", ""), 2},
				{"kscope_requests_total", l("api", "Metadata", "topic", "", "client_id", "admin"), 2},
				{"kscope_request_bytes_total", l("api", "Metadata", "client_id", "admin"), 80},
				{"kscope_response_bytes_total", l("api", "Metadata", "client_id", "admin"), 800},
			},
			histIdx: 0, histSum: 0.001,
		},
		{
			name: "topic known only by id",
			requests: []*event.Request{req(fetch, "consumer", 20*time.Millisecond, 100, 5000,
				event.Partition{TopicID: "q0VD8QdVQPm1k3kZ3qKn9w", Partition: 2, Records: 4, Bytes: 4000})},
			want: []series{
				{"kscope_request_duration_seconds", l("api", fetch, "topic", "q0VD8QdVQPm1k3kZ3qKn9w"), 1},
				{"kscope_requests_total", l("api", fetch, "topic", "q0VD8QdVQPm1k3kZ3qKn9w", "client_id", "consumer"), 1},
				{"kscope_records_total", l("api", fetch, "topic", "q0VD8QdVQPm1k3kZ3qKn9w", "client_id", "consumer"), 4},
				{"kscope_record_bytes_total", l("api", fetch, "topic", "q0VD8QdVQPm1k3kZ3qKn9w", "client_id", "consumer"), 4000},
			},
			histIdx: 0, histSum: 0.02,
		},
		{
			name: "acks=0: counted and unanswered, not in the histogram",
			requests: []*event.Request{
				func() *event.Request {
					r := req(produce, "fire", -1, 300, 0, part("logs", 0, 1, 200))
					r.Acks = i16(0)
					return r
				}(),
				func() *event.Request {
					r := req(produce, "fire", -1, 300, 0, part("logs", 1, 1, 200))
					r.Acks = i16(0)
					return r
				}(),
				req(produce, "fire", 3*time.Millisecond, 300, 50, part("logs", 0, 1, 200)),
			},
			want: []series{
				{"kscope_requests_total", l("api", produce, "topic", "logs", "client_id", "fire"), 3},
				{"kscope_unanswered_requests_total", l("api", produce), 2},
				{"kscope_request_duration_seconds", l("api", produce, "topic", "logs"), 1},
				{"kscope_records_total", l("api", produce, "topic", "logs", "client_id", "fire"), 3},
				{"kscope_request_bytes_total", l("api", produce, "client_id", "fire"), 900},
				{"kscope_response_bytes_total", l("api", produce, "client_id", "fire"), 50},
			},
			histIdx: 2, histSum: 0.003,
		},
		{
			name:     "unknown api keys share one label",
			requests: []*event.Request{{Arrival: t0, End: t0.Add(time.Millisecond), API: "unknown(99)", ClientID: "x"}, {Arrival: t0, End: t0.Add(time.Millisecond), API: "unknown(1234)", ClientID: "x"}},
			want: []series{
				{"kscope_requests_total", l("api", "unknown", "topic", "", "client_id", "x"), 2},
				{"kscope_request_duration_seconds", l("api", "unknown", "topic", ""), 2},
			},
			absent:  []series{{name: "kscope_requests_total", labels: l("api", "unknown(99)", "topic", "", "client_id", "x")}},
			histIdx: 1, histSum: 0.002,
		},
		{
			name: "partition label",
			opts: Options{PartitionLabel: true},
			requests: []*event.Request{
				req(produce, "app1", 2*time.Millisecond, 1000, 60, part("orders", 0, 1, 100), part("orders", 3, 1, 100)),
				req(produce, "app1", 5*time.Millisecond, 1000, 60, part("orders", 3, 1, 100)),
				req("Metadata", "app1", time.Millisecond, 40, 400),
			},
			want: []series{
				{"kscope_request_duration_seconds", l("api", produce, "topic", "orders", "partition", "3"), 2},
				{"kscope_request_duration_seconds", l("api", produce, "topic", "orders", "partition", "0"), 1},
				{"kscope_request_duration_seconds", l("api", "Metadata", "topic", "", "partition", ""), 1},
				{"kscope_requests_total", l("api", produce, "topic", "orders", "client_id", "app1"), 2},
				{"kscope_records_total", l("api", produce, "topic", "orders", "client_id", "app1"), 3},
			},
			absent:  []series{{name: "kscope_request_duration_seconds", labels: l("api", produce, "topic", "orders")}},
			histIdx: 0, histSum: 0.010, // once per partition
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, reg := newSet(t, tc.opts)
			answered := 0
			for _, r := range tc.requests {
				s.Request(r)
				if !r.End.IsZero() {
					answered++
				}
			}
			fams := families(t, reg)
			for _, w := range tc.want {
				if got := value(t, fams, w.name, w.labels); got != w.want {
					t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.want)
				}
			}
			for _, a := range tc.absent {
				if a.labels == nil {
					if mf := fams[a.name]; mf != nil {
						t.Errorf("%s exists: %s", a.name, describe(mf))
					}
				} else if lookup(fams, a.name, a.labels) != nil {
					t.Errorf("%s%v exists", a.name, a.labels)
				}
			}
			if tc.histIdx >= 0 {
				w := tc.want[tc.histIdx]
				var sum float64
				for _, m := range fams["kscope_request_duration_seconds"].GetMetric() {
					sum += m.GetHistogram().GetSampleSum()
				}
				if !approx(sum, tc.histSum) {
					t.Errorf("latency sum %v, want %v (%s)", sum, tc.histSum, w.name)
				}
			}
			// Without the partition label, a request is observed once per
			// topic; count the distinct topics per answered request.
			wantCount := 0
			for _, r := range tc.requests {
				if r.End.IsZero() {
					continue
				}
				n := 0
				if tc.opts.PartitionLabel {
					n = len(r.Partitions)
				} else {
					n = len(trafficByTopic(r.Partitions, nil))
				}
				wantCount += max(n, 1)
			}
			if got := sumOf(fams, "kscope_request_duration_seconds"); got != float64(wantCount) {
				t.Errorf("histogram counts sum to %v, want %d (%d answered requests)", got, wantCount, answered)
			}
		})
	}
}

// TestHistogramCountIsAnswered: one topic per request, so the histogram
// counts exactly the answered requests, and its buckets are LatencyBuckets.
func TestHistogramCountIsAnswered(t *testing.T) {
	s, reg := newSet(t, Options{})
	lats := []time.Duration{50 * time.Microsecond, 100 * time.Microsecond, 2500 * time.Microsecond, 3 * time.Millisecond,
		999 * time.Millisecond, time.Second, 29 * time.Second, 31 * time.Second, -1, -1}
	var answered int
	var sum float64
	for _, lat := range lats {
		s.Request(req("Produce", "c", lat, 100, 10, part("orders", 0, 1, 10)))
		if lat >= 0 {
			answered++
			sum += lat.Seconds()
		}
	}
	fams := families(t, reg)
	h := hist(t, fams, "kscope_request_duration_seconds", l("api", "Produce", "topic", "orders"))
	if h.GetSampleCount() != uint64(answered) || answered != 8 {
		t.Fatalf("count %d, want %d", h.GetSampleCount(), answered)
	}
	if !approx(h.GetSampleSum(), sum) {
		t.Errorf("sum %v, want %v", h.GetSampleSum(), sum)
	}
	if got := value(t, fams, "kscope_requests_total", l("api", "Produce", "topic", "orders", "client_id", "c")); got != 10 {
		t.Errorf("requests_total %v, want 10", got)
	}
	if got := value(t, fams, "kscope_unanswered_requests_total", l("api", "Produce")); got != 2 {
		t.Errorf("unanswered %v, want 2", got)
	}
	if len(h.GetBucket()) != len(LatencyBuckets) {
		t.Fatalf("%d buckets, want %d", len(h.GetBucket()), len(LatencyBuckets))
	}
	// Cumulative counts: 50µs and 100µs are ≤ 0.0001 (le is inclusive).
	wantCum := map[float64]uint64{0.0001: 2, 0.00015: 2, 0.002: 2, 0.003: 4, 0.7: 4, 1: 6, 20: 6, 30: 7}
	for i, b := range h.GetBucket() {
		if b.GetUpperBound() != LatencyBuckets[i] {
			t.Errorf("bucket %d le=%v, want %v", i, b.GetUpperBound(), LatencyBuckets[i])
		}
		if w, ok := wantCum[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("le=%v: cumulative %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
	if h.Schema != nil {
		t.Errorf("schema %d set without NativeHistograms", h.GetSchema())
	}
}

func TestErrors(t *testing.T) {
	withErr := func(r *event.Request, code int16) *event.Request { r.ErrorCode = i16(code); return r }
	perr := func(p event.Partition, code int16) event.Partition { p.ErrorCode = code; return p }
	tests := []struct {
		name     string
		requests []*event.Request
		want     map[[3]string]float64 // api, topic, error
	}{
		{"request level", []*event.Request{
			withErr(req("JoinGroup", "c", time.Millisecond, 10, 10), 25),
			withErr(req("JoinGroup", "c", time.Millisecond, 10, 10), 25),
			withErr(req("JoinGroup", "c", time.Millisecond, 10, 10), 0),
			withErr(req("Heartbeat", "c", time.Millisecond, 10, 10), 27),
		}, map[[3]string]float64{
			{"JoinGroup", "", "UNKNOWN_MEMBER_ID"}:     2,
			{"Heartbeat", "", "REBALANCE_IN_PROGRESS"}: 1,
		}},
		{"partition level", []*event.Request{
			req("Produce", "c", time.Millisecond, 10, 10, perr(part("orders", 0, 1, 1), 6), perr(part("orders", 1, 1, 1), 6),
				part("payments", 0, 1, 1), perr(part("payments", 1, 1, 1), 18)),
			req("Produce", "c", time.Millisecond, 10, 10, perr(part("orders", 2, 1, 1), 6)),
		}, map[[3]string]float64{
			{"Produce", "orders", "NOT_LEADER_FOR_PARTITION"}: 3,
			{"Produce", "payments", "RECORD_LIST_TOO_LARGE"}:  1,
		}},
		{"unknown and -1 codes", []*event.Request{
			withErr(req("Metadata", "c", time.Millisecond, 10, 10), -1),
			withErr(req("Metadata", "c", time.Millisecond, 10, 10), 999),
			req("Fetch", "c", time.Millisecond, 10, 10, perr(part("orders", 0, 0, 0), -7)),
		}, map[[3]string]float64{
			{"Metadata", "", "UNKNOWN_SERVER_ERROR"}: 1,
			{"Metadata", "", "UNKNOWN_CODE"}:         1,
			{"Fetch", "orders", "UNKNOWN_CODE"}:      1,
		}},
		{"both levels in one response", []*event.Request{
			withErr(req("Produce", "c", time.Millisecond, 10, 10, perr(part("orders", 0, 1, 1), 3)), 29),
		}, map[[3]string]float64{
			{"Produce", "", "TOPIC_AUTHORIZATION_FAILED"}:       1,
			{"Produce", "orders", "UNKNOWN_TOPIC_OR_PARTITION"}: 1,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, reg := newSet(t, Options{})
			for _, r := range tc.requests {
				s.Request(r)
			}
			fams := families(t, reg)
			got := map[[3]string]float64{}
			for _, m := range fams["kscope_request_errors_total"].GetMetric() {
				lm := labelMap(m)
				got[[3]string{lm["api"], lm["topic"], lm["error"]}] = m.GetCounter().GetValue()
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("errors\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestErrorName(t *testing.T) {
	for code, want := range map[int16]string{
		-1: "UNKNOWN_SERVER_ERROR", 1: "OFFSET_OUT_OF_RANGE", 6: "NOT_LEADER_FOR_PARTITION", 7: "REQUEST_TIMED_OUT",
		58: "SASL_AUTHENTICATION_FAILED", 32000: "UNKNOWN_CODE", -2: "UNKNOWN_CODE",
	} {
		if got := errorName(code); got != want {
			t.Errorf("errorName(%d) = %q, want %q", code, got, want)
		}
	}
}

func TestTopTopics(t *testing.T) {
	s, reg := newSet(t, Options{TopTopics: 3})
	topic := func(i int) string { return fmt.Sprintf("topic-%d", i) }
	for i := range 10 {
		s.Request(req("Produce", "app", time.Millisecond, 200, 50, part(topic(i), 0, 1, 100)))
		s.Write(&event.Write{Start: t0, End: t0.Add(time.Millisecond), Op: "write", Topic: topic(i), Partition: 0, Bytes: 100})
	}
	fams := families(t, reg)
	wantNamed := []string{"other", "topic-0", "topic-1", "topic-2"}
	for _, name := range []string{"kscope_requests_total", "kscope_records_total", "kscope_record_bytes_total",
		"kscope_request_duration_seconds", "kscope_write_duration_seconds", "kscope_write_bytes_total"} {
		if got := labelValues(fams, name, "topic"); !slices.Equal(got, wantNamed) {
			t.Errorf("%s topics %v, want %v", name, got, wantNamed)
		}
	}
	if got := value(t, fams, "kscope_requests_total", l("api", "Produce", "topic", "other", "client_id", "app")); got != 7 {
		t.Errorf("other requests %v, want 7", got)
	}
	if got := value(t, fams, "kscope_record_bytes_total", l("api", "Produce", "topic", "other", "client_id", "app")); got != 700 {
		t.Errorf("other record bytes %v, want 700", got)
	}
	if got := value(t, fams, "kscope_write_duration_seconds", l("topic", "other", "partition", "other", "op", "write")); got != 7 {
		t.Errorf("other writes %v, want 7", got)
	}

	// Topics 7-9 take the traffic; after a rerank they are named and
	// topics 0-2 are gone.
	for range 10 {
		for i := 7; i < 10; i++ {
			s.Request(req("Produce", "app", time.Millisecond, 20000, 50, part(topic(i), 0, 10, 10000)))
		}
	}
	fams = families(t, reg)
	if got := value(t, fams, "kscope_requests_total", l("api", "Produce", "topic", "other", "client_id", "app")); got != 37 {
		t.Errorf("before rerank: other requests %v, want 37", got)
	}
	s.Rerank()
	fams = families(t, reg)
	if got := labelValues(fams, "kscope_requests_total", "topic"); !slices.Equal(got, []string{"other"}) {
		t.Errorf("after rerank: topics %v, want only other (demoted series deleted)", got)
	}
	for _, name := range []string{"kscope_records_total", "kscope_record_bytes_total", "kscope_request_duration_seconds",
		"kscope_write_duration_seconds", "kscope_write_bytes_total"} {
		for _, v := range labelValues(fams, name, "topic") {
			if v == "topic-0" || v == "topic-1" || v == "topic-2" {
				t.Errorf("after rerank: %s still has topic %s", name, v)
			}
		}
	}
	for i := range 10 {
		s.Request(req("Produce", "app", time.Millisecond, 200, 50, part(topic(i), 0, 1, 100)))
	}
	fams = families(t, reg)
	if got, want := labelValues(fams, "kscope_requests_total", "topic"), []string{"other", "topic-7", "topic-8", "topic-9"}; !slices.Equal(got, want) {
		t.Errorf("after rerank: topics %v, want %v", got, want)
	}
	for i := 7; i < 10; i++ {
		if got := value(t, fams, "kscope_requests_total", l("api", "Produce", "topic", topic(i), "client_id", "app")); got != 1 {
			t.Errorf("%s requests %v, want 1", topic(i), got)
		}
	}
	if got := value(t, fams, "kscope_requests_total", l("api", "Produce", "topic", "other", "client_id", "app")); got != 44 {
		t.Errorf("other requests %v, want 44 (37 before + 7)", got)
	}
	if got := labelValues(fams, "kscope_request_duration_seconds", "topic"); !slices.Equal(got, []string{"other", "topic-7", "topic-8", "topic-9"}) {
		t.Errorf("latency topics %v", got)
	}

	// topic-0 comes back: its series start again from zero (and are not
	// the ones deleted at its demotion).
	for range 50 {
		s.Request(req("Produce", "app", time.Millisecond, 20000, 50, part(topic(0), 0, 10, 100000)))
	}
	s.Rerank() // topic-0 and two of 7-9 stay named
	s.Request(req("Produce", "app", 2*time.Millisecond, 200, 50, part(topic(0), 0, 3, 100)))
	s.Write(&event.Write{Start: t0, End: t0.Add(time.Millisecond), Op: "write", Topic: topic(0), Partition: 0, Bytes: 100})
	fams = families(t, reg)
	for name, want := range map[string]float64{"kscope_requests_total": 1, "kscope_records_total": 3, "kscope_record_bytes_total": 100} {
		if got := value(t, fams, name, l("api", "Produce", "topic", topic(0), "client_id", "app")); got != want {
			t.Errorf("re-promoted topic-0: %s %v, want %v", name, got, want)
		}
	}
	if got := value(t, fams, "kscope_request_duration_seconds", l("api", "Produce", "topic", topic(0))); got != 1 {
		t.Errorf("re-promoted topic-0: latency count %v, want 1", got)
	}
	if got := value(t, fams, "kscope_write_duration_seconds", l("topic", topic(0), "partition", "0", "op", "write")); got != 1 {
		t.Errorf("re-promoted topic-0: write count %v, want 1", got)
	}
}

// TestSeriesBound: many topics, partitions and clients; every label stays
// within its top N plus "other".
func TestSeriesBound(t *testing.T) {
	s, reg := newSet(t, Options{TopTopics: 3, TopClients: 2, TopPartitions: 4, PartitionLabel: true})
	for round := range 3 {
		for i := range 200 {
			p := event.Partition{Topic: fmt.Sprintf("t%d", i%40), Partition: int32(i % 7), Records: 1, Bytes: i, ErrorCode: 6}
			r := req("Produce", fmt.Sprintf("client-%d", i%30), time.Duration(i)*time.Microsecond, 100+i, 10, p)
			s.Request(r)
			s.Write(&event.Write{Start: t0, End: t0.Add(time.Millisecond), Op: "write", Topic: p.Topic, Partition: p.Partition, Bytes: int64(i), Error: "EIO"})
		}
		if round < 2 {
			s.Rerank()
		}
	}
	fams := families(t, reg)
	for name, mf := range fams {
		if n := len(labelValues(fams, name, "topic")); n > 4 {
			t.Errorf("%s: %d topic values: %v", name, n, labelValues(fams, name, "topic"))
		}
		if n := len(labelValues(fams, name, "client_id")); n > 3 {
			t.Errorf("%s: %d client ids: %v", name, n, labelValues(fams, name, "client_id"))
		}
		parts := map[string]bool{}
		for _, m := range mf.GetMetric() {
			lm := labelMap(m)
			if p, ok := lm["partition"]; ok && p != Other {
				parts[lm["topic"]+"/"+p] = true
			}
		}
		if len(parts) > 4 {
			t.Errorf("%s: %d named partitions: %v", name, len(parts), parts)
		}
	}
	if got := labelValues(fams, "kscope_request_bytes_total", "client_id"); len(got) != 3 || !slices.Contains(got, Other) {
		t.Errorf("client ids %v, want 2 named + other", got)
	}
}

func TestTopClients(t *testing.T) {
	s, reg := newSet(t, Options{TopClients: 2})
	for _, c := range []string{"a", "b", "c", "d"} {
		s.Request(req("Fetch", c, time.Millisecond, 100, 0, part("orders", 0, 0, 0)))
	}
	fams := families(t, reg)
	if got := labelValues(fams, "kscope_request_bytes_total", "client_id"); !slices.Equal(got, []string{"a", "b", "other"}) {
		t.Fatalf("clients %v", got)
	}
	if got := value(t, fams, "kscope_request_bytes_total", l("api", "Fetch", "client_id", "other")); got != 200 {
		t.Errorf("other bytes %v, want 200", got)
	}
	if got := value(t, fams, "kscope_requests_total", l("api", "Fetch", "topic", "orders", "client_id", "other")); got != 2 {
		t.Errorf("other requests %v, want 2", got)
	}
	for range 5 {
		s.Request(req("Fetch", "d", time.Millisecond, 1000, 0, part("orders", 0, 0, 0)))
	}
	s.Rerank() // d (5100) and a (100, first of the ties by name) are named; b is demoted
	fams = families(t, reg)
	if got := labelValues(fams, "kscope_request_bytes_total", "client_id"); !slices.Equal(got, []string{"a", "other"}) {
		t.Errorf("after rerank: clients %v, want [a other]", got)
	}
	if got := labelValues(fams, "kscope_requests_total", "client_id"); !slices.Equal(got, []string{"a", "other"}) {
		t.Errorf("after rerank: requests_total clients %v, want [a other]", got)
	}
	s.Request(req("Fetch", "d", time.Millisecond, 7, 0))
	s.Request(req("Fetch", "b", time.Millisecond, 9, 0))
	fams = families(t, reg)
	if got := value(t, fams, "kscope_request_bytes_total", l("api", "Fetch", "client_id", "d")); got != 7 {
		t.Errorf("d bytes %v, want 7", got)
	}
	if got := value(t, fams, "kscope_request_bytes_total", l("api", "Fetch", "client_id", "other")); got != 200+5000+9 {
		t.Errorf("other bytes %v, want 5209", got)
	}
}

func TestLabelCleaning(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name, clientID, topic string
		wantClient, wantTopic string
	}{
		{"plain", "app-1", "orders", "app-1", "orders"},
		{"invalid utf-8", "bad\xff\xfeid", "top\xc3ic", "bad\uFFFD\uFFFDid", "top\uFFFDic"},
		{"control characters", "app\n1\x00\x7f", "t\tx", `app\x0a1\x00\x7f`, `t\x09x`},
		{"C1 control character", "a\u0085b", "t\u009bx", `a\x85b`, `t\x9bx`},
		{"long ascii", long, long[:200], long[:128], long[:128]},
		{"long multibyte", strings.Repeat("é", 100), strings.Repeat("€", 50), strings.Repeat("é", 64), strings.Repeat("€", 42)},
		{"unicode kept", "生产者-1", "訂單", "生产者-1", "訂單"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, reg := newSet(t, Options{})
			s.Request(req("Produce", tc.clientID, time.Millisecond, 10, 10, part(tc.topic, 0, 1, 1)))
			fams := families(t, reg)
			if got := labelValues(fams, "kscope_requests_total", "client_id"); !slices.Equal(got, []string{tc.wantClient}) {
				t.Errorf("client_id %q, want %q", got, tc.wantClient)
			}
			if got := labelValues(fams, "kscope_request_bytes_total", "client_id"); !slices.Equal(got, []string{tc.wantClient}) {
				t.Errorf("request_bytes client_id %q, want %q", got, tc.wantClient)
			}
			if got := labelValues(fams, "kscope_requests_total", "topic"); !slices.Equal(got, []string{tc.wantTopic}) {
				t.Errorf("topic %q, want %q", got, tc.wantTopic)
			}
			if got := labelValues(fams, "kscope_request_duration_seconds", "topic"); !slices.Equal(got, []string{tc.wantTopic}) {
				t.Errorf("latency topic %q, want %q", got, tc.wantTopic)
			}
		})
	}
}

func TestCleanLabel(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "",
		"ok":                            "ok",
		"\x01":                          `\x01`,
		"\x1f~\x7f":                     `\x1f~\x7f`,
		"\xff":                          "\uFFFD",
		"\xe2\x82":                      "\uFFFD\uFFFD", // a cut 3-byte sequence
		"€":                             "€",
		strings.Repeat("a", 128):        strings.Repeat("a", 128),
		strings.Repeat("a", 129):        strings.Repeat("a", 128),
		strings.Repeat("a", 127) + "é":  strings.Repeat("a", 127), // no half character
		strings.Repeat("a", 125) + "\n": strings.Repeat("a", 125), // no half escape
		strings.Repeat("a", 124) + "\n": strings.Repeat("a", 124) + `\x0a`,
	} {
		if got := cleanLabel(in); got != want {
			t.Errorf("cleanLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIOEvents(t *testing.T) {
	ms := time.Millisecond
	s, reg := newSet(t, Options{})
	s.Write(&event.Write{Start: t0, End: t0.Add(1200 * time.Microsecond), Op: "write", Topic: "orders", Partition: 3, Bytes: 4096})
	s.Write(&event.Write{Start: t0, End: t0.Add(800 * time.Microsecond), Op: "write", Topic: "orders", Partition: 3, Bytes: 1024})
	s.Write(&event.Write{Start: t0, End: t0.Add(8 * ms), Op: "fsync", Topic: "orders", Partition: 3})
	s.Write(&event.Write{Start: t0, End: t0.Add(ms), Op: "pwrite64", Topic: "orders", Partition: 1, Bytes: 10, Error: "EIO"})
	s.Write(&event.Write{Start: t0, End: t0.Add(ms), Op: "fdatasync", Topic: "orders", Partition: 1, Error: "EIO"})
	s.Sync(&event.FileSync{Kind: event.KindExt4Fsync, Start: t0, End: t0.Add(3 * ms), Dev: "259:0"})
	s.Sync(&event.FileSync{Kind: event.KindExt4Fsync, Start: t0, End: t0.Add(5 * ms), Dev: "259:0"})
	s.Sync(&event.FileSync{Kind: event.KindExt4Fsync, Start: t0, End: t0.Add(2 * ms), Dev: "8:16"})
	s.Commit(&event.JournalCommit{Kind: event.KindJBD2Commit, Start: t0, End: t0.Add(12 * ms), Dev: "259:0"})
	s.Commit(&event.JournalCommit{Kind: event.KindXlogWrite, Start: t0, End: t0.Add(600 * time.Microsecond), Dev: "8:16"})
	s.Block(&event.BlockIO{Kind: event.KindBlockIO, Start: t0, End: t0.Add(400 * time.Microsecond), Dev: "259:0", Op: "write", Bytes: 65536})
	s.Block(&event.BlockIO{Kind: event.KindBlockIO, Start: t0, End: t0.Add(200 * time.Microsecond), Dev: "259:0", Op: "write", Bytes: 4096})
	s.Block(&event.BlockIO{Kind: event.KindBlockIO, Start: t0, End: t0.Add(2 * ms), Dev: "259:0", Op: "flush"})
	fams := families(t, reg)

	type hs struct {
		name   string
		labels map[string]string
		count  uint64
		sum    float64
	}
	for _, w := range []hs{
		{"kscope_write_duration_seconds", l("topic", "orders", "partition", "3", "op", "write"), 2, 0.002},
		{"kscope_write_duration_seconds", l("topic", "orders", "partition", "3", "op", "fsync"), 1, 0.008},
		{"kscope_write_duration_seconds", l("topic", "orders", "partition", "1", "op", "pwrite64"), 1, 0.001},
		{"kscope_write_duration_seconds", l("topic", "orders", "partition", "1", "op", "fdatasync"), 1, 0.001},
		{"kscope_fs_sync_duration_seconds", l("device", "259:0"), 2, 0.008},
		{"kscope_fs_sync_duration_seconds", l("device", "8:16"), 1, 0.002},
		{"kscope_journal_commit_duration_seconds", l("device", "259:0", "kind", "jbd2_commit"), 1, 0.012},
		{"kscope_journal_commit_duration_seconds", l("device", "8:16", "kind", "xlog_write"), 1, 0.0006},
		{"kscope_block_io_duration_seconds", l("device", "259:0", "op", "write"), 2, 0.0006},
		{"kscope_block_io_duration_seconds", l("device", "259:0", "op", "flush"), 1, 0.002},
	} {
		h := hist(t, fams, w.name, w.labels)
		if h.GetSampleCount() != w.count || !approx(h.GetSampleSum(), w.sum) {
			t.Errorf("%s%v: count %d sum %v, want %d %v", w.name, w.labels, h.GetSampleCount(), h.GetSampleSum(), w.count, w.sum)
		}
		if len(h.GetBucket()) != len(LatencyBuckets) {
			t.Errorf("%s: %d buckets", w.name, len(h.GetBucket()))
		}
	}
	for _, w := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"kscope_write_bytes_total", l("topic", "orders", "partition", "3", "op", "write"), 5120},
		{"kscope_write_bytes_total", l("topic", "orders", "partition", "1", "op", "pwrite64"), 10},
		{"kscope_write_errors_total", l("topic", "orders", "op", "pwrite64"), 1},
		{"kscope_write_errors_total", l("topic", "orders", "op", "fdatasync"), 1},
		{"kscope_block_io_bytes_total", l("device", "259:0", "op", "write"), 69632},
	} {
		if got := value(t, fams, w.name, w.labels); got != w.want {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.want)
		}
	}
	// An fsync writes nothing (its byte series, made with its latency's, stays 0).
	if m := lookup(fams, "kscope_write_bytes_total", l("topic", "orders", "partition", "3", "op", "fsync")); m != nil && m.GetCounter().GetValue() != 0 {
		t.Errorf("fsync bytes %v, want 0", m.GetCounter().GetValue())
	}
	// No bytes, no byte series: a flush moves no data.
	for _, a := range []struct {
		name   string
		labels map[string]string
	}{
		{"kscope_block_io_bytes_total", l("device", "259:0", "op", "flush")},
		{"kscope_write_errors_total", l("topic", "orders", "op", "write")},
	} {
		if lookup(fams, a.name, a.labels) != nil {
			t.Errorf("%s%v exists", a.name, a.labels)
		}
	}
	if n := len(fams["kscope_write_errors_total"].GetMetric()); n != 2 {
		t.Errorf("%d write error series, want 2", n)
	}
}

func TestTopPartitionsWrites(t *testing.T) {
	s, reg := newSet(t, Options{TopPartitions: 2})
	for p := range int32(5) {
		s.Write(&event.Write{Start: t0, End: t0.Add(time.Millisecond), Op: "write", Topic: "orders", Partition: p, Bytes: 100})
	}
	fams := families(t, reg)
	if got := labelValues(fams, "kscope_write_bytes_total", "partition"); !slices.Equal(got, []string{"0", "1", "other"}) {
		t.Fatalf("partitions %v", got)
	}
	if got := value(t, fams, "kscope_write_bytes_total", l("topic", "orders", "partition", "other", "op", "write")); got != 300 {
		t.Errorf("other partitions' bytes %v, want 300", got)
	}
	for range 3 {
		s.Write(&event.Write{Start: t0, End: t0.Add(time.Millisecond), Op: "write", Topic: "orders", Partition: 4, Bytes: 1000})
	}
	s.Rerank()
	fams = families(t, reg)
	// 4 leads; 0 and 1 tie with 2 and 3 (101 each), 0 wins by name: 1 is demoted.
	if got := labelValues(fams, "kscope_write_bytes_total", "partition"); !slices.Equal(got, []string{"0", "other"}) {
		t.Errorf("after rerank: partitions %v, want [0 other]", got)
	}
	s.Write(&event.Write{Start: t0, End: t0.Add(time.Millisecond), Op: "write", Topic: "orders", Partition: 4, Bytes: 1})
	fams = families(t, reg)
	if got := value(t, fams, "kscope_write_bytes_total", l("topic", "orders", "partition", "4", "op", "write")); got != 1 {
		t.Errorf("partition 4 bytes %v, want 1", got)
	}
}

func TestNativeHistograms(t *testing.T) {
	for _, native := range []bool{false, true} {
		t.Run(fmt.Sprint("native=", native), func(t *testing.T) {
			s, reg := newSet(t, Options{NativeHistograms: native})
			s.Request(req("Produce", "c", 3*time.Millisecond, 10, 10, part("orders", 0, 1, 1)))
			s.Write(&event.Write{Start: t0, End: t0.Add(time.Millisecond), Op: "write", Topic: "orders", Bytes: 1})
			s.Sync(&event.FileSync{Start: t0, End: t0.Add(time.Millisecond), Dev: "8:0"})
			s.Commit(&event.JournalCommit{Start: t0, End: t0.Add(time.Millisecond), Dev: "8:0", Kind: event.KindJBD2Commit})
			s.Block(&event.BlockIO{Start: t0, End: t0.Add(time.Millisecond), Dev: "8:0", Op: "read"})
			fams := families(t, reg)
			n := 0
			for name, mf := range fams {
				if mf.GetType() != dto.MetricType_HISTOGRAM {
					continue
				}
				for _, m := range mf.GetMetric() {
					n++
					h := m.GetHistogram()
					if native != (h.Schema != nil) {
						t.Errorf("%s: schema set %v, want %v", name, h.Schema != nil, native)
					}
					if native && (h.GetSchema() < -4 || h.GetSchema() > 8) {
						t.Errorf("%s: schema %d", name, h.GetSchema())
					}
					if native && len(h.GetPositiveSpan()) == 0 {
						t.Errorf("%s: no positive spans after an observation", name)
					}
					if len(h.GetBucket()) != len(LatencyBuckets) {
						t.Errorf("%s: %d classic buckets, want %d", name, len(h.GetBucket()), len(LatencyBuckets))
					}
					if h.GetSampleCount() != 1 {
						t.Errorf("%s: count %d", name, h.GetSampleCount())
					}
				}
			}
			if n != 5 {
				t.Errorf("%d histogram series, want 5", n)
			}
		})
	}
}

func TestNewRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(reg, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg, Options{}); err == nil {
		t.Fatal("second New on the same registry: no error")
	}
}

func TestConcurrency(t *testing.T) {
	const (
		requesters = 6
		writers    = 3
		perWorker  = 2000
	)
	run := func(t *testing.T, o Options, rerank bool) map[string]*dto.MetricFamily {
		s, reg := newSet(t, o)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var bg sync.WaitGroup
		bg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if rerank {
					s.Rerank()
				}
				if _, err := reg.Gather(); err != nil {
					t.Error(err)
					return
				}
			}
		})
		for g := range requesters {
			wg.Go(func() {
				for i := range perWorker {
					lat := time.Duration(i%50) * time.Millisecond
					if i%10 == 0 {
						lat = -1
					}
					r := req("Produce", fmt.Sprintf("client-%d", (g+i)%12), lat, 100+i, 10,
						part(fmt.Sprintf("topic-%d", i%20), int32(i%4), 1, i), part(fmt.Sprintf("topic-%d", i%20), int32(i%4+4), 1, i))
					if i%7 == 0 {
						r.Partitions[0].ErrorCode = 6
					}
					s.Request(r)
				}
			})
		}
		for g := range writers {
			wg.Go(func() {
				for i := range perWorker {
					s.Write(&event.Write{Start: t0, End: t0.Add(time.Duration(i) * time.Microsecond), Op: "write",
						Topic: fmt.Sprintf("topic-%d", (i+g)%20), Partition: int32(i % 8), Bytes: int64(i)})
					s.Sync(&event.FileSync{Start: t0, End: t0.Add(time.Millisecond), Dev: "8:0"})
					s.Commit(&event.JournalCommit{Start: t0, End: t0.Add(time.Millisecond), Dev: "8:0", Kind: event.KindJBD2Commit})
					s.Block(&event.BlockIO{Start: t0, End: t0.Add(time.Millisecond), Dev: "8:0", Op: "write", Bytes: 1})
				}
			})
		}
		wg.Wait()
		close(stop)
		bg.Wait()
		fams := families(t, reg)
		// Series without topic or client labels are never deleted.
		if got := value(t, fams, "kscope_unanswered_requests_total", l("api", "Produce")); got != requesters*perWorker/10 {
			t.Errorf("unanswered %v, want %d", got, requesters*perWorker/10)
		}
		for _, name := range []string{"kscope_fs_sync_duration_seconds", "kscope_journal_commit_duration_seconds", "kscope_block_io_duration_seconds"} {
			if got := sumOf(fams, name); got != writers*perWorker {
				t.Errorf("%s count %v, want %d", name, got, writers*perWorker)
			}
		}
		return fams
	}
	t.Run("exact totals", func(t *testing.T) {
		fams := run(t, Options{}, false)
		total := float64(requesters * perWorker)
		answered := total * 9 / 10
		for name, want := range map[string]float64{
			"kscope_requests_total":           total,
			"kscope_request_duration_seconds": answered,
			"kscope_records_total":            2 * total,
			"kscope_write_duration_seconds":   writers * perWorker,
			"kscope_request_errors_total":     float64(requesters * ((perWorker + 6) / 7)),
		} {
			if got := sumOf(fams, name); got != want {
				t.Errorf("%s: %v, want %v", name, got, want)
			}
		}
		if got := len(labelValues(fams, "kscope_requests_total", "topic")); got != 20 {
			t.Errorf("%d topics, want 20", got)
		}
	})
	t.Run("with rerank", func(t *testing.T) {
		fams := run(t, Options{TopTopics: 5, TopClients: 3, TopPartitions: 10}, true)
		for name := range fams {
			if n := len(labelValues(fams, name, "topic")); n > 6 {
				t.Errorf("%s: %d topics", name, n)
			}
			if n := len(labelValues(fams, name, "client_id")); n > 4 {
				t.Errorf("%s: %d clients", name, n)
			}
		}
	})
}
