package event

import (
	"encoding/json"
	"testing"
	"time"
)

func TestWriteJSON(t *testing.T) {
	start := time.Date(2026, 11, 21, 21, 30, 0, 123456789, time.UTC)
	tests := []struct {
		name string
		w    Write
		want string
	}{
		{
			name: "write",
			w: Write{Start: start, End: start.Add(300 * time.Millisecond), LatencyMs: 300, TID: 4242,
				Thread: "data-plane-kafk", Op: "write", Bytes: 1024, Offset: 4096,
				File: "orders-3/00000000000000001234.log", Topic: "orders", Partition: 3, Dev: "7:0"},
			want: `{"start":"2026-11-21T21:30:00.123456789Z","end":"2026-11-21T21:30:00.423456789Z","latency_ms":300,"tid":4242,"thread":"data-plane-kafk","op":"write","bytes":1024,"offset":4096,"file":"orders-3/00000000000000001234.log","topic":"orders","partition":3,"dev":"7:0"}`,
		},
		{
			name: "failed fsync",
			w: Write{Start: start, End: start.Add(time.Millisecond), LatencyMs: 1, TID: 1, Thread: "t", Op: "fsync",
				Offset: -1, File: "recovery-point-offset-checkpoint", Partition: -1, Dev: "259:1", Error: "EIO"},
			want: `{"start":"2026-11-21T21:30:00.123456789Z","end":"2026-11-21T21:30:00.124456789Z","latency_ms":1,"tid":1,"thread":"t","op":"fsync","bytes":0,"offset":-1,"file":"recovery-point-offset-checkpoint","topic":"","partition":-1,"dev":"259:1","error":"EIO"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(&tt.w)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
			var back Write
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !back.Start.Equal(tt.w.Start) || !back.End.Equal(tt.w.End) || back.Latency() != tt.w.Latency() {
				t.Errorf("round trip: got %+v, want %+v", back, tt.w)
			}
		})
	}
}
