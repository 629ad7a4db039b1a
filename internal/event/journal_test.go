package event

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestJournalJSON pins the documented JSON names of the journal events.
func TestJournalJSON(t *testing.T) {
	start := time.Date(2026, 11, 21, 21, 30, 0, 123456789, time.UTC)
	end := start.Add(4500 * time.Microsecond)
	tests := []struct {
		name string
		v    any
		want []string
		not  []string
	}{
		{"jbd2", &JournalCommit{Kind: KindJBD2Commit, Start: start, End: end, LatencyMs: 4.5, Dev: "7:0", FS: "ext4", TID: 42,
			SyncCommit: true, Phases: &JournalPhases{RunningMs: 4, LoggingMs: 1, HandleCount: 3, Blocks: 5, BlocksLogged: 7}},
			[]string{`"kind":"jbd2_commit"`, `"start":"2026-11-21T21:30:00.123456789Z"`, `"end":"2026-11-21T21:30:00.127956789Z"`,
				`"latency_ms":4.5`, `"dev":"7:0"`, `"fs":"ext4"`, `"tid":42`, `"sync_commit":true`, `"running_ms":4`, `"logging_ms":1`,
				`"handle_count":3`, `"blocks":5`, `"blocks_logged":7`},
			[]string{`"lsn"`, `"bytes"`}},
		{"xlog", &JournalCommit{Kind: KindXlogWrite, Start: start, End: end, LatencyMs: 4.5, Dev: "7:1", FS: "xfs", LSN: 1<<32 | 96, Bytes: 2048},
			[]string{`"kind":"xlog_write"`, `"fs":"xfs"`, `"lsn":4294967392`, `"bytes":2048`},
			[]string{`"tid"`, `"phases"`}},
		{"fsync", &FileSync{Kind: KindExt4Fsync, Start: start, End: end, LatencyMs: 4.5, PID: 10, TID: 11, Datasync: true, Dev: "7:0", Ino: 12,
			File: "t-0/00000000000000000000.log", Topic: "t", Partition: 0},
			[]string{`"kind":"ext4_fsync"`, `"pid":10`, `"tid":11`, `"datasync":true`, `"ino":12`, `"file":"t-0/00000000000000000000.log"`, `"topic":"t"`, `"partition":0`},
			[]string{`"error"`}},
		{"block", &BlockIO{Kind: KindBlockIO, Start: start, End: end, LatencyMs: 4.5, Dev: "7:0", Op: "write", RWBS: "WS", Bytes: 4096, Sector: 8, Error: "EIO"},
			[]string{`"kind":"block_io"`, `"op":"write"`, `"rwbs":"WS"`, `"bytes":4096`, `"sector":8`, `"error":"EIO"`},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("%s lacks %s", b, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(string(b), n) {
					t.Errorf("%s has %s", b, n)
				}
			}
		})
	}
}
