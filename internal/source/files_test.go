package source

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/wire"
)

// realCapture is 120 packets (pcapng) of a real broker's port 9092 (scripts/demo.sh):
// a console producer sending 200 records with message-id headers to
// "orders", then ProducerPerformance starting an lz4 load, cut off with
// five produce requests still in flight.
const realCapture = "../../testdata/captures/produce-lz4-and-ids.pcapng"

func readAll(t testing.TB, files ...string) ([]*event.Request, Result) {
	t.Helper()
	var out []*event.Request
	res, err := ReadFiles(files, Options{Wire: wire.DefaultConfig()}, func(r *event.Request) { out = append(out, r) })
	if err != nil {
		t.Fatal(err)
	}
	return out, res
}

func TestRealCapture(t *testing.T) {
	reqs, res := readAll(t, realCapture)
	w := res.Wire
	if w.Requests != 38 || w.Responses != 33 || w.Unanswered != 5 || w.SkippedBytes != 0 || w.DecodeErrors != 0 || w.BatchErrors != 0 {
		t.Fatalf("stats: %+v", w)
	}
	var orders *event.Request
	for _, r := range reqs {
		if r.API == "Produce" && len(r.Partitions) == 1 && r.Partitions[0].Topic == "orders" {
			orders = r
		}
	}
	if orders == nil {
		t.Fatal("no produce request to orders")
	}
	p := orders.Partitions[0]
	if p.Records != 200 || len(p.MessageIDs) != 200 || p.MessageIDs[0] != "order-1" || p.MessageIDs[199] != "order-200" {
		t.Errorf("orders: %d records, ids %d (%v ...)", p.Records, len(p.MessageIDs), p.MessageIDs[:min(3, len(p.MessageIDs))])
	}
	if orders.ClientID != "console-producer" || orders.Acks == nil || *orders.Acks != -1 || !orders.Answered || orders.LatencyMs <= 0 {
		t.Errorf("orders request: %+v", orders)
	}
}

// The same packets in a pcap file (the test capture is pcapng) must
// decode identically.
func TestPcapMatchesPcapNG(t *testing.T) {
	in, err := capture.OpenFile(realCapture)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if in.Format != capture.FormatPcapNG {
		t.Fatalf("test capture is %s, want pcapng", in.Format)
	}
	pcapPath := filepath.Join(t.TempDir(), "same.pcap")
	out, err := os.Create(pcapPath)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriterNanos(out)
	for i := 0; ; i++ {
		data, ci, link, err := in.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := w.WriteFileHeader(262144, link); err != nil {
				t.Fatal(err)
			}
		}
		ci.AncillaryData = nil
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	out.Close()
	a, _ := readAll(t, realCapture)
	b, res := readAll(t, pcapPath)
	if res.Capture.Packets != 120 || len(a) != len(b) {
		t.Fatalf("pcapng %d requests, pcap %d (%d packets)", len(a), len(b), res.Capture.Packets)
	}
	for i := range a {
		if a[i].CorrelationID != b[i].CorrelationID || !a[i].Arrival.Equal(b[i].Arrival) || a[i].LatencyMs != b[i].LatencyMs {
			t.Errorf("request %d differs: %+v vs %+v", i, a[i], b[i])
		}
	}
}

// Connections cut out of the damaged captures (5% of packets dropped) on
// which earlier versions of the decoder lost untouched requests; each
// names the requests that must be answered.
func TestCaptureLossRegressions(t *testing.T) {
	for _, c := range []struct {
		file     string
		port     uint16
		answered []int32 // correlation ids
		lost     []int32 // their responses are not in the capture
	}{
		// The first two responses lost: a correlation id alone matched
		// stray bytes and swallowed the responses after it.
		{"lost-first-responses.pcap", 37803, []int32{3, 4, 5, 6, 8, 9}, []int32{0, 1}},
		// A lost response followed by a 940 KB fetch response: record
		// batch bytes inside it looked like a response that ended
		// where the data did.
		{"lost-response-before-large-fetch.pcap", 35997, []int32{10, 11, 14}, []int32{9}},
		// A lost response, then a packet lost inside a 940 KB fetch
		// response: the next fetch's response must still be found.
		{"lost-inside-large-fetch.pcap", 45551, []int32{10, 14}, []int32{9}},
	} {
		t.Run(c.file, func(t *testing.T) {
			cfg := wire.DefaultConfig()
			cfg.Ports = []uint16{c.port}
			got := map[int32]bool{}
			_, err := ReadFiles([]string{"../../testdata/captures/" + c.file}, Options{Wire: cfg}, func(r *event.Request) {
				got[r.CorrelationID] = r.Answered
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range c.answered {
				if answered, seen := got[id]; !seen || !answered {
					t.Errorf("request %d: seen %v, answered %v", id, seen, answered)
				}
			}
			for _, id := range c.lost {
				if got[id] {
					t.Errorf("request %d answered, but its response is not in the capture", id)
				}
			}
		})
	}
}

func TestNotACapture(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.txt")
	os.WriteFile(path, []byte("hello, this is not a capture"), 0o644)
	_, err := ReadFiles([]string{path}, Options{Wire: wire.DefaultConfig()}, func(*event.Request) {})
	if !errors.Is(err, capture.ErrNotCapture) {
		t.Fatalf("err = %v", err)
	}
}

// BenchmarkReadFiles measures the whole pipeline (file, link layers,
// reassembly, Kafka decoding, record batches) on a real capture.
func BenchmarkReadFiles(b *testing.B) {
	st, err := os.Stat(realCapture)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		readAll(b, realCapture)
	}
}

// TestResultAdd: every counter of a Result is summed (a field added to
// wire.Stats or CaptureStats without its line in Add fails here).
func TestResultAdd(t *testing.T) {
	var one Result
	for _, v := range []reflect.Value{reflect.ValueOf(&one.Wire).Elem(), reflect.ValueOf(&one.Capture).Elem()} {
		for i := range v.NumField() {
			v.Field(i).SetInt(1)
		}
	}
	var sum Result
	sum.Add(one)
	sum.Add(one)
	for _, v := range []reflect.Value{reflect.ValueOf(sum.Wire), reflect.ValueOf(sum.Capture)} {
		for i := range v.NumField() {
			if got := v.Field(i).Int(); got != 2 {
				t.Errorf("%s.%s = %d after adding 1 twice", v.Type().Name(), v.Type().Field(i).Name, got)
			}
		}
	}
}
