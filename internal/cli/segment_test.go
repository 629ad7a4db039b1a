package cli

import (
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

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
		{"truncated", []string{"segment", "dump", "--format", "json", cut}, ExitFailure, nil, []string{"position 3735: truncated: length 66 exceeds remaining 36 bytes", "bytes [3735, 3783) damaged (48 bytes)"}, 11},
		{"not a segment", []string{"segment", "dump", text}, ExitBadInput, nil, []string{"notes.log: position 0: not a Kafka log segment"}, -1},
		{"corrupt", []string{"segment", "dump", "--format", "json", corrupt}, ExitFailure, nil, []string{"position 652: bad length: length 2147483647 exceeds", "next valid batch at position 1196", "1 damaged byte ranges (544 bytes)"}, 11},
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
	if code != ExitFailure || !strings.Contains(out, log+": position 652: bad CRC: CRC mismatch") {
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

// TestSegmentDamageAndNames runs dump and verify on damaged segments and
// on files whose names say something else than their bytes (issue 33).
func TestSegmentDamageAndNames(t *testing.T) {
	data, err := os.ReadFile(txnSegment)
	if err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(idsIndex)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The batch at 574 claims the bytes of the next ten batches.
	merged := append([]byte(nil), data...)
	binary.BigEndian.PutUint32(merged[574+8:], 3735-574-12)
	mergedLog := write("00000000000000000002.log", merged)
	indexRow := `{"index_position":0,"offset":324,"position":4350}`
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
		rows   int // JSON rows, -1: not counted
	}{
		{"dump past a bad length", []string{"segment", "dump", "--format", "json", mergedLog}, ExitFailure,
			[]string{`{"position":652,`, `{"position":3164,`},
			[]string{"position 574: bad length: length 3149 runs over the valid batch at position 652", "bytes [574, 652) damaged (78 bytes)"}, 11},
		{"verify past a bad length", []string{"segment", "verify", mergedLog}, ExitFailure,
			[]string{"position 574: bad length"}, []string{"11 batches", "1 damaged byte ranges (78 bytes)"}, -1},
		{"lookup after a bad length", []string{"segment", "lookup", "--format", "json", mergedLog, "--position", "1196", "--bytes", "78"}, ExitFailure,
			[]string{`{"position":1196,`}, []string{"position 574: bad length", "1 damaged byte ranges before position 1196"}, 1},
		{"index named as nothing", []string{"segment", "dump", "--format", "json", write("00000000000000000000", index)}, 0,
			[]string{indexRow}, []string{"an offset index, base offset 0: 1 entries in use"}, 1},
		{"index named as a segment", []string{"segment", "dump", "--format", "json", write("00000000000000000000.log", index)}, ExitFailure,
			[]string{indexRow}, []string{"named as a log segment but its bytes are an offset index"}, 1},
		{"index named .log", []string{"segment", "dump", "--format", "json", write(".log", index)}, ExitFailure,
			[]string{`"offset":324,`}, []string{"named as a log segment but its bytes are an offset index"}, 1},
		{"segment named as an index", []string{"segment", "dump", "--format", "json", "-q", write("00000000000000000000.index", data)}, ExitFailure,
			[]string{`{"position":3735,`}, []string{"named as an offset index but its bytes are a log segment"}, 12},
		{"verify an index named as a segment", []string{"segment", "verify", filepath.Join(dir, "00000000000000000000.log")}, ExitFailure,
			[]string{"named as a log segment but its bytes are an offset index"}, nil, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stdout %s; stderr %s", code, c.code, firstN(out, 500), errOut)
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
				if rows := jsonLines(t, out); len(rows) != c.rows {
					t.Errorf("%d JSON rows, want %d", len(rows), c.rows)
				}
			}
		})
	}
}

// TestSegmentRefusesNonRegular checks that dump and verify refuse a FIFO,
// a directory where a file is expected and a symlink to a device, in one
// line with exit 2, without blocking on the FIFO (issue 33).
func TestSegmentRefusesNonRegular(t *testing.T) {
	base := t.TempDir()
	fifo := filepath.Join(base, "00000000000000000000.log")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	dirAsFile := filepath.Join(base, "00000000000000000001.log")
	if err := os.Mkdir(dirAsFile, 0o755); err != nil {
		t.Fatal(err)
	}
	toZero := filepath.Join(base, "00000000000000000002.log")
	if err := os.Symlink("/dev/zero", toZero); err != nil {
		t.Fatal(err)
	}
	// Partitions holding each of them next to a good segment.
	partition := func(name string, add func(dir string)) string {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.CopyFS(dir, os.DirFS(txnDir)); err != nil {
			t.Fatal(err)
		}
		add(dir)
		return dir
	}
	withFIFO := partition("fifo-0", func(dir string) { syscall.Mkfifo(filepath.Join(dir, "00000000000000000100.log"), 0o644) })
	withDir := partition("dir-0", func(dir string) { os.Mkdir(filepath.Join(dir, "00000000000000000100.log"), 0o755) })
	withZero := partition("zero-0", func(dir string) { os.Symlink("/dev/zero", filepath.Join(dir, "00000000000000000100.log")) })
	withMeta := partition("meta-0", func(dir string) {
		os.Remove(filepath.Join(dir, "partition.metadata"))
		syscall.Mkfifo(filepath.Join(dir, "partition.metadata"), 0o644)
	})
	for _, c := range []struct {
		args []string
		what string
	}{
		{[]string{"segment", "verify", fifo}, "a FIFO"},
		{[]string{"segment", "dump", fifo}, "a FIFO"},
		{[]string{"segment", "lookup", fifo, "--position", "0", "--bytes", "1"}, "a FIFO"},
		{[]string{"segment", "verify", dirAsFile}, "a directory"},
		{[]string{"segment", "dump", dirAsFile}, "a directory"},
		{[]string{"segment", "verify", toZero}, "a character device"},
		{[]string{"segment", "dump", toZero}, "a character device"},
		{[]string{"segment", "verify", withFIFO}, "a FIFO"},
		{[]string{"segment", "verify", withDir}, "a directory"},
		{[]string{"segment", "verify", withZero}, "a character device"},
		{[]string{"segment", "verify", withMeta}, "a FIFO"},
	} {
		t.Run(strings.Join(c.args[:2], " ")+" "+filepath.Base(filepath.Dir(c.args[2]))+"/"+filepath.Base(c.args[2]), func(t *testing.T) {
			type result struct {
				code        int
				out, errOut string
			}
			done := make(chan result, 1)
			go func() {
				code, out, errOut := run(t, c.args...)
				done <- result{code, out, errOut}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("blocked")
			}
			if r.code != ExitBadInput || !strings.Contains(r.errOut, "not a regular file ("+c.what) || strings.Count(strings.TrimSpace(r.errOut), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q; want exit 2 and one line saying it is not a regular file (%s)", r.code, r.errOut, c.what)
			}
		})
	}
}
