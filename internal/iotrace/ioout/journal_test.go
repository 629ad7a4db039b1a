package ioout

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/iotrace"
)

// TestJournalFormats writes one event of each journal kind in every format.
func TestJournalFormats(t *testing.T) {
	start := time.Date(2026, 11, 21, 21, 30, 0, 123456789, time.UTC)
	end := start.Add(2500 * time.Microsecond)
	commit := &event.JournalCommit{Kind: event.KindJBD2Commit, Start: start, End: end, LatencyMs: 2.5, Dev: "7:0", FS: "ext4",
		TID: 42, Phases: &event.JournalPhases{RunningMs: 4, LoggingMs: 0.5, HandleCount: 3, Blocks: 5, BlocksLogged: 7}}
	xlog := &event.JournalCommit{Kind: event.KindXlogWrite, Start: start, End: end, LatencyMs: 2.5, Dev: "7:1", FS: "xfs", LSN: 1<<32 | 96, Bytes: 2048}
	fsync := &event.FileSync{Kind: event.KindExt4Fsync, Start: start, End: end, LatencyMs: 2.5, PID: 10, TID: 11, Dev: "7:0", Ino: 12,
		File: "t-0/00000000000000000000.log", Topic: "t"}
	block := &event.BlockIO{Kind: event.KindBlockIO, Start: start, End: end, LatencyMs: 2.5, Dev: "7:0", Op: "write", RWBS: "WS", Bytes: 4096, Sector: 2048}
	steal := &event.CPUSteal{Kind: event.KindCPUSteal, Start: start, End: end, CPU: 1, StolenMs: 1.25, TID: 12, PID: 10,
		Thread: "data-plane-kafka-network-thread-1-ListenerName(PLAINTEXT)-PLAINTEXT-0"}
	tests := []struct {
		format string
		want   []string // substrings of the output, in order
	}{
		{"table", []string{"START TIME", "FILE",
			"2.500", "jbd2-commit", "dev 7:0 tid 42 (run 4 lock 0 flush 0 log 0.5 ms; 3 handles, 5 blocks, 7 logged)",
			"xlog-write", "2048", "dev 7:1 lsn 1:96",
			"11", "pid 10", "ext4-fsync", "t-0/00000000000000000000.log",
			"blk-write", "4096", "1024", "dev 7:0 WS",
			"1.250", "12", "data-plane-kafka-network-thread-1", "cpu-steal", "cpu1: stolen 1.250 ms of 2.500 ms between context switches"}},
		{"json", []string{`"kind":"jbd2_commit"`, `"tid":42`, `"kind":"xlog_write"`, `"lsn":4294967392`,
			`"kind":"ext4_fsync"`, `"file":"t-0/00000000000000000000.log"`, `"kind":"block_io"`, `"sector":2048`,
			`"kind":"cpu_steal"`, `"cpu":1`, `"stolen_ms":1.25`, `"tid":12`, `"pid":10`, `"thread":"data-plane-kafka-network-thread-1`}},
		{"csv", []string{"start,end,latency_ms",
			"2026-11-21T21:30:00.123456789Z,2026-11-21T21:30:00.125956789Z,2.500000,,,jbd2-commit,0,-1,\"dev 7:0 tid 42 (run 4",
			",,,xlog-write,2048,-1,dev 7:1 lsn 1:96,,-1,7:1,",
			",11,pid 10,ext4-fsync,0,-1,t-0/00000000000000000000.log,t,0,7:0,",
			",,,blk-write,4096,1048576,dev 7:0 WS,,-1,7:0,",
			"2026-11-21T21:30:00.123456789Z,2026-11-21T21:30:00.125956789Z,1.250000,12,data-plane-kafka-network-thread-1-ListenerName(PLAINTEXT)-PLAINTEXT-0,cpu-steal,0,-1,cpu1: stolen 1.250 ms of 2.500 ms between context switches,,-1,,"}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, tt.format)
			if err != nil {
				t.Fatal(err)
			}
			h := w.Handlers()
			for _, err := range []error{h.Commit(commit), h.Commit(xlog), h.Sync(fsync), h.Block(block), h.Steal(steal), w.Flush()} {
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

func TestWriteDeviceSummaries(t *testing.T) {
	commits := iotrace.DeviceSummary{Dev: "7:0", Kind: iotrace.KindJBD2Commit, Count: 4, Total: 8 * time.Millisecond}
	commits.Slots[20] = 3 // [1.05, 2.10) ms
	commits.Slots[22] = 1 // [4.19, 8.39) ms
	forces := iotrace.DeviceSummary{Dev: "7:1", Kind: iotrace.KindXFSLogForce, Count: 9}
	forces.Slots[0] = 9
	var buf bytes.Buffer
	if err := WriteDeviceSummaries(&buf, "json", []iotrace.DeviceSummary{commits, forces}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	var got deviceSummaryJSON
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got.Dev != "7:0" || got.Kind != "jbd2-commit" || got.Count != 4 || *got.MeanMs != 2 || *got.P50Ms != 2.097152 ||
		*got.P99Ms != 8.388608 || *got.MaxMs != 8.388608 {
		t.Errorf("jbd2 summary %s", lines[0])
	}
	if lines[1] != `{"dev":"7:1","kind":"xfs-log-force","count":9,"bytes":0}` {
		t.Errorf("log force summary %s", lines[1])
	}
	buf.Reset()
	if err := WriteDeviceSummaries(&buf, "table", []iotrace.DeviceSummary{commits, forces}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"KIND", "jbd2-commit", "8.389", "xfs-log-force", "-"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, buf.String())
		}
	}
}
