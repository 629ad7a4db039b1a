package fetchsplit

import (
	"math"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

var t0 = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

func at(msv float64) time.Time { return t0.Add(time.Duration(msv * float64(time.Millisecond))) }

func i64(v int64) *int64 { return &v }
func i32(v int32) *int32 { return &v }
func i16(v int16) *int16 { return &v }

// fetch is a consumer's Fetch (max_wait 500 ms, min_bytes 1) arriving at
// arrive ms, its broker wait starting 1 ms later, its response sent from
// respStart to end (ms after t0), reading from offset of t-0 and
// returning bytes.
func fetch(client string, arrive, respStart, end float64, offset int64, bytes int, hwm int64) *event.Request {
	r := &event.Request{APIKey: apiFetch, API: "Fetch", Client: client, Answered: true, ReplicaID: i32(-1),
		Arrival: at(arrive), End: at(end), LatencyMs: end - arrive, BrokerMs: end - arrive - 1, ResponseMs: end - respStart,
		ResponseBytes: bytes + 100, Fetch: event.FetchParams{MaxWaitMs: 500, MinBytes: 1}}
	p := event.Partition{Topic: "t", Partition: 0, FetchOffset: i64(offset), Bytes: bytes, HighWatermark: i64(hwm)}
	if bytes > 0 {
		p.FirstOffset, p.LastOffset = i64(offset), i64(hwm-1)
	}
	r.Partitions = []event.Partition{p}
	return r
}

// produce is an acks=all produce of records to t-0 appended at base,
// answered (response start and end) at end ms.
func produce(end float64, base int64, records int) *event.Request {
	return &event.Request{APIKey: apiProduce, API: "Produce", Client: "10.0.0.9:4000", Answered: true, Acks: i16(-1),
		Arrival: at(end - 3), End: at(end), LatencyMs: 3, BrokerMs: 2,
		Partitions: []event.Partition{{Topic: "t", Partition: 0, Records: records, Bytes: 100 * records, BaseOffset: i64(base)}}}
}

// slow is the part of a send of ms for a response of bytes that counts
// as slow at the default rate.
func slow(msv float64, bytes int) float64 { return max(0, msv-float64(bytes+100)/DefaultSendRate*1000) }

func near(got, want float64) bool { return math.Abs(got-want) < 0.01 }

func TestSplit(t *testing.T) {
	const consumer = "10.0.0.5:5000"
	tests := []struct {
		name    string
		before  []*event.Request // requests the splitter sees first
		fetch   *event.Request
		reading Reading
		want    Split
	}{
		{
			name:  "purgatory full wait: no data came back after max_wait_ms",
			fetch: fetch(consumer, 0, 501, 502, 100, 0, 100),
			want:  Split{TotalMs: 502, PurgatoryMs: 500, OtherMs: 1, SendingMs: 1, AbnormalMs: 1 + slow(1, 0), Basis: BasisNoData},
		},
		{
			name:   "purgatory then data: a produce brought the high watermark past the offset 200 ms in",
			before: []*event.Request{fetch(consumer, -50, -49, -48, 90, 1000, 100), produce(201, 100, 5)},
			fetch:  fetch(consumer, 0, 205, 206, 100, 500, 105),
			want:   Split{TotalMs: 206, PurgatoryMs: 200, OtherMs: 5, SendingMs: 1, AbnormalMs: 5 + slow(1, 500), Basis: BasisDataArrived},
		},
		{
			name:   "no purgatory: the data was there (an earlier response's high watermark) yet the broker took 300 ms",
			before: []*event.Request{fetch("10.0.0.6:6000", -20, -11, -10, 0, 1000, 500)},
			fetch:  fetch(consumer, 0, 301, 302, 100, 1000, 500),
			want:   Split{TotalMs: 302, OtherMs: 301, SendingMs: 1, AbnormalMs: 301 + slow(1, 1000), Basis: BasisDataThere},
		},
		{
			name:   "slow send: 1 kB taking 400 ms on the wire",
			before: []*event.Request{fetch("10.0.0.6:6000", -20, -11, -10, 0, 1000, 500)},
			fetch:  fetch(consumer, 0, 2, 402, 100, 1000, 500),
			want:   Split{TotalMs: 402, OtherMs: 2, SendingMs: 400, AbnormalMs: 2 + slow(400, 1000), Basis: BasisDataThere},
		},
		{
			name:    "disk read: 250 ms of the 320 ms send waited for the disk",
			before:  []*event.Request{fetch("10.0.0.6:6000", -20, -11, -10, 0, 1000, 500)},
			fetch:   fetch(consumer, 0, 2, 322, 100, 1000, 500),
			reading: Reading{Ns: 300e6, DiskNs: 250e6},
			want: Split{TotalMs: 322, OtherMs: 2, ReadingMs: 300, DiskMs: 250, SendingMs: 20,
				AbnormalMs: 2 + 250 + slow(70, 1000), Basis: BasisDataThere},
		},
		{
			name:  "assumed: data came back and nothing shows when it arrived",
			fetch: fetch(consumer, 0, 301, 302, 100, 1000, 500),
			want:  Split{TotalMs: 302, PurgatoryMs: 300, OtherMs: 1, SendingMs: 1, AbnormalMs: 1 + slow(1, 1000), Basis: BasisAssumed},
		},
		{
			name:  "no wait asked: every moment counts",
			fetch: func() *event.Request { r := fetch(consumer, 0, 301, 302, 100, 0, 100); r.Fetch.MaxWaitMs = 0; return r }(),
			want:  Split{TotalMs: 302, OtherMs: 301, SendingMs: 1, AbnormalMs: 301 + slow(1, 0), Basis: BasisNoWait},
		},
		{
			name:  "waited past max_wait_ms: the excess is not purgatory",
			fetch: fetch(consumer, 0, 801, 802, 100, 0, 100),
			want:  Split{TotalMs: 802, PurgatoryMs: 500, OtherMs: 301, SendingMs: 1, AbnormalMs: 301 + slow(1, 0), Basis: BasisNoData},
		},
		{
			name: "fetch session: a partition left out of the request reads from where the last fetch left off",
			before: []*event.Request{fetch(consumer, -50, -49, -48, 90, 1000, 100),
				fetch("10.0.0.6:6000", -20, -11, -10, 0, 1000, 500)},
			fetch: func() *event.Request {
				r := fetch(consumer, 0, 301, 302, 100, 1000, 500)
				r.Partitions[0].FetchOffset = nil
				return r
			}(),
			want: Split{TotalMs: 302, OtherMs: 301, SendingMs: 1, AbnormalMs: 301 + slow(1, 1000), Basis: BasisDataThere},
		},
		{
			name:   "two partitions, min_bytes 1: the one whose data was there completed it, the other's unknown arrival makes no purgatory",
			before: []*event.Request{fetch("10.0.0.6:6000", -20, -11, -10, 0, 1000, 500)},
			fetch: func() *event.Request {
				r := fetch(consumer, 0, 205, 206, 100, 1000, 500)
				q := r.Partitions[0]
				q.Topic, q.FetchOffset, q.HighWatermark = "other", i64(0), i64(10)
				r.Partitions = append(r.Partitions, q)
				r.Partitions[0].Topic = "t"
				r.Partitions[0].FetchOffset = i64(100)
				return r
			}(),
			want: Split{TotalMs: 206, OtherMs: 205, SendingMs: 1, AbnormalMs: 205 + slow(1, 1000), Basis: BasisDataThere},
		},
		{
			name: "acks=1 with followers seen: its answer does not move the high watermark",
			before: []*event.Request{
				func() *event.Request {
					r := fetch("10.0.0.2:7000", -90, -89, -88, 0, 0, 0)
					r.ReplicaID = i32(2)
					return r
				}(),
				func() *event.Request { r := produce(-5, 100, 5); r.Acks = i16(1); return r }()},
			fetch: fetch(consumer, 0, 301, 302, 100, 1000, 105),
			want:  Split{TotalMs: 302, PurgatoryMs: 300, OtherMs: 1, SendingMs: 1, AbnormalMs: 1 + slow(1, 1000), Basis: BasisAssumed},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{})
			for _, r := range tc.before {
				s.Add(r)
			}
			got, ok := s.AddWith(tc.fetch, tc.reading)
			if !ok {
				t.Fatal("fetch not split")
			}
			if got.Basis != tc.want.Basis || !near(got.TotalMs, tc.want.TotalMs) || !near(got.PurgatoryMs, tc.want.PurgatoryMs) ||
				!near(got.OtherMs, tc.want.OtherMs) || !near(got.ReadingMs, tc.want.ReadingMs) || !near(got.DiskMs, tc.want.DiskMs) ||
				!near(got.SendingMs, tc.want.SendingMs) || !near(got.AbnormalMs, tc.want.AbnormalMs) {
				t.Errorf("split\n got %+v\nwant %+v", got, tc.want)
			}
			if sum := got.PurgatoryMs + got.OtherMs + got.ReadingMs + got.SendingMs; !near(sum, got.TotalMs) {
				t.Errorf("parts add up to %.3f ms, total %.3f ms", sum, got.TotalMs)
			}
		})
	}
}

func TestNotSplit(t *testing.T) {
	follower := fetch("10.0.0.2:7000", 0, 1, 2, 0, 0, 0)
	follower.ReplicaID = i32(1)
	unanswered := fetch("10.0.0.5:5000", 0, 1, 2, 0, 0, 0)
	unanswered.Answered, unanswered.End = false, time.Time{}
	stepped := fetch("10.0.0.5:5000", 10, 1, 2, 0, 0, 0)
	stepped.ClockStep = true
	for name, r := range map[string]*event.Request{"follower": follower, "unanswered": unanswered, "clock step": stepped,
		"produce": produce(5, 0, 1)} {
		if sp, ok := New(Options{}).Add(r); ok {
			t.Errorf("%s: split %+v", name, sp)
		}
	}
}

// TestBounded: past MaxPartitions, partitions are counted, not followed.
func TestBounded(t *testing.T) {
	s := New(Options{MaxPartitions: 2})
	for p := range int32(5) {
		r := produce(1, 0, 1)
		r.Partitions[0].Partition = p
		s.Add(r)
	}
	if s.marks.Len() != 2 || s.Untracked != 3 {
		t.Errorf("%d partitions followed, %d untracked; want 2 and 3", s.marks.Len(), s.Untracked)
	}
}
