package cli

import (
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Real segments from the acceptance test (see internal/segment).
const (
	txnSegment = "../../testdata/segments/seg-txn-0/00000000000000000000.log"
	txnTimeIdx = "../../testdata/segments/seg-txn-0/00000000000000000000.timeindex"
	idsIndex   = "../../testdata/segments/seg-ids-zstd-0/00000000000000000000.index"
	txnDir     = "../../testdata/segments/seg-txn-0"
)

// batchKeys are the JSON fields of a batch, as issue 3 and docs/segment.md
// list them.
var batchKeys = []string{"position", "size", "base_offset", "last_offset", "count", "magic", "compression", "crc_valid",
	"producer_id", "producer_epoch", "base_sequence", "partition_leader_epoch", "transactional", "control",
	"first_timestamp", "max_timestamp"}

func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		rows = append(rows, m)
	}
	return rows
}

func keysOf(m map[string]any) []string {
	var ks []string
	for _, k := range batchKeys {
		if _, ok := m[k]; ok {
			ks = append(ks, k)
		}
	}
	return ks
}

func TestSegmentDump(t *testing.T) {
	data, err := os.ReadFile(txnSegment)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cut := filepath.Join(dir, "00000000000000000000.log")
	os.WriteFile(cut, data[:len(data)-30], 0o644)
	text := filepath.Join(dir, "notes.log")
	os.WriteFile(text, []byte(strings.Repeat("not a segment ", 20)), 0o644)
	corrupt := filepath.Join(dir, "00000000000000000001.log")
	bad := append([]byte(nil), data...)
	binary.BigEndian.PutUint32(bad[652+8:], 0x7fffffff)
	os.WriteFile(corrupt, bad, 0o644)

	cases := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
		rows   int // JSON rows, -1: not JSON
	}{
		{"table", []string{"segment", "dump", txnSegment}, 0, []string{"POSITION", "BASE_OFFSET", "3735      78    155"}, []string{"12 batches, 156 records, 3813 bytes"}, -1},
		{"table records", []string{"segment", "dump", "--records", txnSegment}, 0, []string{"| offset: 26 ", `headers: [message-id=seg-txn-25 txn=01ff]`, "control: commit coordinator_epoch: 0"}, nil, -1},
		{"json", []string{"segment", "dump", "--format", "json", "-q", txnSegment}, 0, nil, nil, 12},
		{"csv records", []string{"segment", "dump", "--format", "csv", "--records", txnSegment}, 0, []string{"file,position,size", ",offset,timestamp,key_size", "seg-txn-149 txn=05ff"}, nil, -1},
		{"message ids", []string{"segment", "dump", "--format", "json", "--message-id-header", "message-id", txnSegment}, 0, []string{`"message_ids":["seg-txn-0","seg-txn-1",`}, nil, 12},
		{"index", []string{"segment", "dump", "--format", "json", idsIndex}, 0, []string{`{"index_position":0,"offset":324,"position":4350}`}, []string{"offset index, base offset 0: 1 entries in use"}, 1},
		{"timeindex", []string{"segment", "dump", txnTimeIdx}, 0, []string{"TIMESTAMP", "1795295512831  155"}, nil, -1},
		{"truncated", []string{"segment", "dump", "--format", "json", cut}, 0, nil, []string{"warning:", "position 3735: truncated batch"}, 11},
		{"not a segment", []string{"segment", "dump", text}, ExitBadInput, nil, []string{"notes.log: position 0: not a Kafka log segment"}, -1},
		{"corrupt", []string{"segment", "dump", "--format", "json", corrupt}, ExitFailure, nil, []string{"position 652: length 2147483647 exceeds"}, 2},
		{"missing", []string{"segment", "dump", "/nonexistent.log"}, ExitBadInput, nil, []string{"no such file"}, -1},
		{"bad format", []string{"segment", "dump", "--format", "xml", txnSegment}, ExitBadInput, nil, []string{`"xml" for "--format"`}, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, c.code, errOut)
			}
			for _, s := range c.stdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, firstN(out, 2000))
				}
			}
			for _, s := range c.stderr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errOut)
				}
			}
			if c.rows >= 0 {
				rows := jsonLines(t, out)
				if len(rows) != c.rows {
					t.Fatalf("%d JSON rows, want %d", len(rows), c.rows)
				}
				if c.name != "index" {
					for _, r := range rows {
						if !reflect.DeepEqual(keysOf(r), batchKeys) {
							t.Fatalf("row keys %v", r)
						}
					}
				}
			}
		})
	}
}

func TestSegmentDumpRecordsJSON(t *testing.T) {
	code, out, errOut := run(t, "segment", "dump", "--format", "json", "--payload", "-q", txnSegment)
	if code != 0 {
		t.Fatal(errOut)
	}
	rows := jsonLines(t, out)
	recs := 0
	for _, r := range rows {
		for _, rec := range r["records"].([]any) {
			recs++
			m := rec.(map[string]any)
			if r["control"] == true {
				if m["control_type"] != "commit" && m["control_type"] != "abort" {
					t.Errorf("control record %v", m)
				}
				continue
			}
			h := m["headers"].(map[string]any)
			// "txn" holds {txn number, 0xff}: not UTF-8, so hex.
			if !strings.HasPrefix(h["message-id"].(string), "seg-txn-") || !strings.HasSuffix(h["txn"].(string), "ff") {
				t.Errorf("headers %v", h)
			}
			if !strings.HasPrefix(m["key"].(string), "k") || !strings.HasPrefix(m["value"].(string), "txn value ") {
				t.Errorf("payload %v", m)
			}
		}
	}
	if recs != 156 {
		t.Fatalf("%d records", recs)
	}
	// Without --payload, no keys or values.
	_, out, _ = run(t, "segment", "dump", "--format", "json", "--records", txnSegment)
	if strings.Contains(out, `"value":`) || strings.Contains(out, "txn value") {
		t.Fatal("payload printed without --payload")
	}
}

func TestSegmentLookup(t *testing.T) {
	code, out, errOut := run(t, "segment", "lookup", txnSegment, "--position", "652", "--bytes", "544", "--format", "json")
	if code != 0 {
		t.Fatal(errOut)
	}
	rows := jsonLines(t, out)
	if len(rows) != 1 || rows[0]["position"] != 652.0 {
		t.Fatalf("rows %v", rows)
	}
	ids := rows[0]["message_ids"].([]any)
	if len(ids) != 25 || ids[0] != "seg-txn-25" || ids[24] != "seg-txn-49" {
		t.Fatalf("ids %v", ids)
	}
	// A range over a data batch and its commit marker.
	code, out, _ = run(t, "segment", "lookup", txnSegment, "--position", "0", "--bytes", "600")
	if code != 0 || !strings.Contains(out, "seg-txn-0 seg-txn-1 ") || strings.Count(out, "\n") != 4 {
		t.Fatalf("table:\n%s", out)
	}
	for _, args := range [][]string{
		{"segment", "lookup", txnSegment},
		{"segment", "lookup", txnSegment, "--position", "0"},
		{"segment", "lookup", "/nonexistent.log", "--position", "0", "--bytes", "1"},
	} {
		if code, _, _ := run(t, args...); code != ExitBadInput {
			t.Errorf("%v: exit %d", args, code)
		}
	}
	if code, _, errOut := run(t, "segment", "lookup", txnSegment, "--position", "5000", "--bytes", "1"); code != ExitFailure || !strings.Contains(errOut, "end of the file") {
		t.Errorf("beyond the end: exit %d, %s", code, errOut)
	}
}

func TestSegmentVerify(t *testing.T) {
	code, _, errOut := run(t, "segment", "verify", txnDir)
	if code != 0 || !strings.Contains(errOut, "1 partitions, 1 log files, 12 batches") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	dir := filepath.Join(t.TempDir(), "seg-txn-0")
	if err := os.CopyFS(dir, os.DirFS(txnDir)); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "00000000000000000000.log")
	os.Chmod(log, 0o644)
	data, _ := os.ReadFile(log)
	data[700] ^= 0xff
	os.WriteFile(log, data, 0o644)
	code, out, _ := run(t, "segment", "verify", dir)
	if code != ExitFailure || !strings.Contains(out, log+": position 652: CRC mismatch") {
		t.Fatalf("exit %d: %s", code, out)
	}
	if code, _, _ := run(t, "segment", "verify", t.TempDir()); code != ExitBadInput {
		t.Fatalf("empty dir: exit %d", code)
	}
}

// TestSegmentEscapes checks that strings from a segment cannot drive the
// terminal: a header carrying an escape sequence is printed escaped.
func TestSegmentEscapes(t *testing.T) {
	rec := kmsg.Record{Value: []byte("v"), Headers: []kmsg.Header{{Key: "message-id", Value: []byte("\x1b[31mred\n")}}}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	raw := rec.AppendTo(nil)
	b := kmsg.RecordBatch{Magic: 2, NumRecords: 1, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Records: raw}
	batch := b.AppendTo(nil)
	binary.BigEndian.PutUint32(batch[8:], uint32(len(batch)-12))
	binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)))
	path := filepath.Join(t.TempDir(), "00000000000000000000.log")
	os.WriteFile(path, batch, 0o644)
	for _, args := range [][]string{
		{"segment", "dump", "--records", path},
		{"segment", "dump", "--records", "--format", "csv", path},
		{"segment", "lookup", path, "--position", "0", "--bytes", "1"},
	} {
		code, out, errOut := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: %s", args, errOut)
		}
		if strings.Contains(out, "\x1b") || !strings.Contains(out, `\x1b[31mred\x0a`) {
			t.Errorf("%v: not escaped:\n%q", args, out)
		}
	}
	_, out, _ := run(t, "segment", "dump", "--records", "--format", "json", path)
	if !strings.Contains(out, `"message-id":"\u001b[31mred\n"`) {
		t.Errorf("json: %s", out)
	}
}

func firstN(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
