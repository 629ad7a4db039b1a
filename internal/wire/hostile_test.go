package wire

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/records"
)

// manyIDs are message ids enough for a produce request of several KB.
func manyIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("message-%06d", i)
	}
	return ids
}

// TestUnfinishedFrames: a frame the capture ends in the middle of is
// counted as partial (and unfinished), not dropped without a word.
func TestUnfinishedFrames(t *testing.T) {
	request := requestFrame(produceRequest("t", 0, 1, manyIDs(300)...), 9, 1, "c")
	response := responseFrame(produceResponse("t", 0), 9, 1)
	for _, tc := range []struct {
		name       string
		req, resp  []byte
		unanswered int64
	}{
		{"request cut off", request[:len(request)/2], nil, 0},
		{"request size cut off", request[:2], nil, 0},
		{"response cut off", request, response[:len(response)-5], 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConversation(40100)
			c.handshake()
			c.send(true, tc.req, 1448, time.Millisecond)
			c.send(false, tc.resp, 1448, time.Millisecond)
			_, st := run(c.segs)
			if st.Partial != 1 || st.Unfinished != 1 || st.Unanswered != tc.unanswered {
				t.Errorf("partial %d, unfinished %d, unanswered %d; want 1, 1, %d", st.Partial, st.Unfinished, st.Unanswered, tc.unanswered)
			}
		})
	}
}

// TestPartialFrameBudget: frames in progress on many connections hold at
// most Config.MaxPartialBytes (64 MiB by default) of memory together;
// the frames that did not fit are counted, and a small exchange still
// decodes.
func TestPartialFrameBudget(t *testing.T) {
	const (
		conns     = 100
		perConn   = 1 << 20 // of a frame announced as 2 MiB
		heldBound = 64<<20 + 16<<20
	)
	var out []*event.Request
	d := NewDecoder(DefaultConfig(), &records.Decoder{}, nil, func(r *event.Request) { out = append(out, r) })
	pd := capture.NewDecoder()
	feed := func(segs []testSegment) {
		for _, s := range segs {
			seg, ok := pd.Decode(s.data, layers.LinkTypeRaw)
			if !ok {
				t.Fatal("test packet did not decode")
			}
			d.Packet(seg, s.ci)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range conns {
		c := newConversation(uint16(41000 + i))
		c.handshake()
		frame := append(kbin.AppendInt32(nil, 2<<20), requestFrame(produceRequest("t", 0, 1, "a"), 9, 1, "c")[4:]...)
		c.send(true, append(frame, make([]byte, perConn-len(frame))...), 1448, time.Microsecond)
		feed(c.segs) // one connection's packets at a time: the test's own memory stays small
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > heldBound {
		t.Errorf("%d MiB held for %d connections' unfinished frames of 1 MiB, want at most %d MiB", held>>20, conns, heldBound>>20)
	}
	small := newConversation(42000)
	small.handshake()
	small.send(true, requestFrame(produceRequest("t", 0, 1, "a"), 9, 5, "c"), 1448, time.Millisecond)
	small.send(false, responseFrame(produceResponse("t", 0), 9, 5), 1448, time.Millisecond)
	feed(small.segs)
	d.Close()
	st := d.Stats()
	if len(out) != 1 || !out[0].Answered || out[0].CorrelationID != 5 {
		t.Errorf("the small exchange after them: %+v", out)
	}
	if st.Unfinished != conns || st.OverBudget == 0 || st.OverBudget > conns {
		t.Errorf("unfinished %d, over budget %d; want %d and between 1 and %d", st.Unfinished, st.OverBudget, conns, conns)
	}
}

// TestOversizedFrames: a complete frame larger than MaxFrameBytes, whose
// header is a request's (or a response awaited), is timed and counted as
// oversized, its body not kept; the stream stays in sync. Only a size
// that no header backs up is a loss of sync.
func TestOversizedFrames(t *testing.T) {
	big := requestFrame(produceRequest("t", 0, 1, manyIDs(300)...), 9, 7, "c")
	fetch := requestFrame(fetchRequest("t", [16]byte{}, 0, 0, -1), 11, 8, "c")
	fetchResp := kmsg.NewPtrFetchResponse()
	ft := kmsg.NewFetchResponseTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchResponseTopicPartition()
	fp.RecordBatches = makeBatch(manyIDs(300)...)
	ft.Partitions = append(ft.Partitions, fp)
	fetchResp.Topics = append(fetchResp.Topics, ft)
	bigResp := responseFrame(fetchResp, 11, 8)
	garbage := append(kbin.AppendInt32(nil, 50000), "not a kafka header at all, just text"...)
	for _, tc := range []struct {
		name               string
		req, resp          []byte
		oversized, resyncs int64
		answered, partial  bool
	}{
		{"request over the limit", big, responseFrame(produceResponse("t", 0), 9, 7), 1, 0, true, true},
		{"response over the limit", fetch, bigResp, 1, 0, true, true},
		{"a size no header backs up", append(garbage, fetch...), nil, 0, 1, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.MaxFrameBytes, cfg.MaxKeepBytes = 1024, 1024
			c := newConversation(40200)
			c.handshake()
			c.send(true, tc.req, 1448, time.Millisecond)
			c.send(false, tc.resp, 1448, time.Millisecond)
			got, d := decodeConfig(c.segs, cfg)
			st := d.Stats()
			if st.Oversized != tc.oversized || st.Resyncs != tc.resyncs {
				t.Errorf("oversized %d, resyncs %d; want %d, %d (stats %+v)", st.Oversized, st.Resyncs, tc.oversized, tc.resyncs, st)
			}
			if len(got) != 1 || got[0].Answered != tc.answered || got[0].Partial != tc.partial {
				t.Errorf("requests %+v; want one, answered %v, partial %v", got, tc.answered, tc.partial)
			}
		})
	}
}

// TestClockStep: a response timestamped before its request (the capture's
// clock stepped back between them) is flagged and counted, not reported
// as a negative latency.
func TestClockStep(t *testing.T) {
	for _, tc := range []struct {
		name    string
		step    time.Duration
		flagged bool
	}{
		{"clock stepped back 10 s", -10 * time.Second, true},
		{"clock stepped forward", 10 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConversation(40300)
			c.handshake()
			c.send(true, requestFrame(produceRequest("t", 0, 1, "a"), 9, 3, "c"), 1448, time.Millisecond)
			c.now = c.now.Add(tc.step)
			c.send(false, responseFrame(produceResponse("t", 0), 9, 3), 1448, time.Millisecond)
			got, st := run(c.segs)
			if len(got) != 1 || !got[0].Answered || got[0].ClockStep != tc.flagged {
				t.Fatalf("requests %+v; want one answered, clock step %v", got, tc.flagged)
			}
			if want := map[bool]int64{true: 1}[tc.flagged]; st.ClockStepped != want {
				t.Errorf("%d clock-stepped requests counted, want %d", st.ClockStepped, want)
			}
		})
	}
}

// BenchmarkMultiPacketFrames decodes produce requests of about 60 KB,
// each in 1448-byte segments: the frames that are buffered (and, within
// Config.MaxPartialBytes, allocated) as they arrive.
func BenchmarkMultiPacketFrames(b *testing.B) {
	c := newConversation(40400)
	c.handshake()
	req := produceRequest("t", 0, 1, manyIDs(1500)...)
	for corr := range int32(200) {
		c.send(true, requestFrame(req, 9, corr, "c"), 1448, time.Microsecond)
		c.send(false, responseFrame(produceResponse("t", 0), 9, corr), 1448, time.Microsecond)
	}
	var bytes int64
	for _, s := range c.segs {
		bytes += int64(len(s.data))
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	for b.Loop() {
		if _, d := decodeConfig(c.segs, DefaultConfig()); d.Stats().Responses != 200 {
			b.Fatalf("stats %+v", d.Stats())
		}
	}
}
