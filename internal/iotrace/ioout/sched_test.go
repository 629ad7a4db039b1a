package ioout

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// TestSchedFormats writes a run-queue delay and a connection's thread in
// every format.
func TestSchedFormats(t *testing.T) {
	start := time.Date(2026, 11, 21, 21, 30, 0, 123456789, time.UTC)
	end := start.Add(2500 * time.Microsecond)
	rd := &event.RunDelay{Kind: event.KindRunDelay, Start: start, End: end, LatencyMs: 2.5, TID: 4711,
		Thread: "data-plane-kafk", CPU: 1, Preempted: true, HolderPID: 900, HolderTID: 901, HolderComm: "kworker/1:2"}
	woken := &event.RunDelay{Kind: event.KindRunDelay, Start: start, End: end, LatencyMs: 2.5, TID: 4712,
		Thread: "kafka-request-h", CPU: 0, HolderComm: "swapper/0"}
	wu := &event.Wakeup{Kind: event.KindWakeup, Start: start, End: end, SleptMs: 2.5, TID: 4714, Thread: "data-plane-kafk",
		WakerTID: 4715, WakerThread: "data-plane-kafk"}
	ct := &event.ConnThread{Kind: event.KindConnThread, Time: start, TID: 4713, Thread: "data-plane-kafk",
		Client: "10.0.0.7:50000", Broker: "[::1]:9092"}
	tests := []struct {
		format string
		want   []string // substrings of the output, in order
	}{
		{"table", []string{"START TIME", "FILE",
			"2.500", "4711", "data-plane-kafk", "run-delay", "cpu1 preempted, behind kworker/1:2 (pid 900 tid 901)",
			"4712", "kafka-request-h", "run-delay", "cpu0 woken, behind swapper/0 (pid 0 tid 0)",
			"-", "-", "4713", "data-plane-kafk", "conn", "client 10.0.0.7:50000 -> broker [::1]:9092",
			"2.500", "4714", "woken", "by data-plane-kafk (tid 4715)"}},
		{"json", []string{`{"kind":"run_delay","start":"2026-11-21T21:30:00.123456789Z","end":"2026-11-21T21:30:00.125956789Z","latency_ms":2.5,"tid":4711,"thread":"data-plane-kafk","cpu":1,"preempted":true,"holder_pid":900,"holder_tid":901,"holder_comm":"kworker/1:2"}`,
			`{"kind":"run_delay",`, `"cpu":0,"holder_pid":0,"holder_tid":0,"holder_comm":"swapper/0"}`,
			`{"kind":"conn_thread","time":"2026-11-21T21:30:00.123456789Z","tid":4713,"thread":"data-plane-kafk","client":"10.0.0.7:50000","broker":"[::1]:9092"}`,
			`{"kind":"wakeup","start":"2026-11-21T21:30:00.123456789Z","end":"2026-11-21T21:30:00.125956789Z","slept_ms":2.5,"tid":4714,"thread":"data-plane-kafk","waker_tid":4715,"waker_thread":"data-plane-kafk"}`}},
		{"csv", []string{"start,end,latency_ms",
			"2026-11-21T21:30:00.123456789Z,2026-11-21T21:30:00.125956789Z,2.500000,4711,data-plane-kafk,run-delay,0,-1,\"cpu1 preempted, behind kworker/1:2 (pid 900 tid 901)\",,-1,,",
			"2026-11-21T21:30:00.123456789Z,2026-11-21T21:30:00.123456789Z,0.000000,4713,data-plane-kafk,conn,0,-1,client 10.0.0.7:50000 -> broker [::1]:9092,,-1,,",
			"2026-11-21T21:30:00.123456789Z,2026-11-21T21:30:00.125956789Z,2.500000,4714,data-plane-kafk,woken,0,-1,by data-plane-kafk (tid 4715),,-1,,"}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, tt.format)
			if err != nil {
				t.Fatal(err)
			}
			h := w.Handlers()
			for _, err := range []error{h.RunDelay(rd), h.RunDelay(woken), h.ConnThread(ct), h.Wakeup(wu), w.Flush()} {
				if err != nil {
					t.Fatal(err)
				}
			}
			out, rest := buf.String(), buf.String()
			for _, s := range tt.want {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", s, out)
				}
				rest = rest[i+len(s):]
			}
		})
	}
}
