package e2e

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/event"
)

// packet is one packet of a capture, with what the damage checks need.
type packet struct {
	data []byte
	ci   gopacket.CaptureInfo
	conn string // "a|b" of the two endpoints, sorted, or "" when not TCP
	syn  bool
}

func readPackets(t *testing.T, path string) ([]packet, layers.LinkType) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dec := capture.NewDecoder()
	var out []packet
	for {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := packet{data: data, ci: ci}
		if seg, ok := dec.Decode(data, r.LinkType()); ok {
			a := seg.NetFlow.Src().String() + ":" + seg.TCP.SrcPort.String()
			b := seg.NetFlow.Dst().String() + ":" + seg.TCP.DstPort.String()
			if a > b {
				a, b = b, a
			}
			p.conn, p.syn = a+"|"+b, seg.TCP.SYN
		}
		out = append(out, p)
	}
	return out, r.LinkType()
}

func writePackets(t *testing.T, path string, link layers.LinkType, pkts []packet) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriterNanos(f)
	if err := w.WriteFileHeader(262144, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range pkts {
		if err := w.WritePacket(p.ci, p.data); err != nil {
			t.Fatal(err)
		}
	}
}

// damaged is a derived capture and the packets its damage touched.
type damaged struct {
	name    string
	pkts    []packet
	touched []packet // dropped packets (for touch checks), or nil
	// untouched reports whether a clean request must decode exactly.
	untouched func(r *event.Request) bool
	// minShare of the clean requests that must be decoded exactly.
	minShare float64
}

// touches reports whether any touched packet of r's connection falls in
// [arrival, end] (or after arrival for unanswered requests).
func touches(touched []packet, r *event.Request) bool {
	a, b := r.Client, r.Broker
	if a > b {
		a, b = b, a
	}
	conn := a + "|" + b
	for _, p := range touched {
		if p.conn != conn || p.ci.Timestamp.Before(r.Arrival) {
			continue
		}
		if !r.Answered || !p.ci.Timestamp.After(r.End) {
			return true
		}
	}
	return false
}

func derive(pkts []packet) []damaged {
	rng := rand.New(rand.NewPCG(2, 11))
	var out []damaged

	var kept, dropped []packet
	for _, p := range pkts {
		if rng.Float64() < 0.05 {
			dropped = append(dropped, p)
		} else {
			kept = append(kept, p)
		}
	}
	out = append(out, damaged{name: "drop5pct", pkts: kept, touched: dropped,
		untouched: func(r *event.Request) bool { return !touches(dropped, r) }, minShare: 0.6})

	reordered := append([]packet(nil), pkts...)
	for i := 0; i+1 < len(reordered); i++ {
		if !reordered[i].syn && !reordered[i+1].syn && rng.Float64() < 0.05 {
			reordered[i], reordered[i+1] = reordered[i+1], reordered[i]
			i++
		}
	}
	out = append(out, damaged{name: "reorder5pct", pkts: reordered, untouched: func(*event.Request) bool { return true }, minShare: 1})

	var dup []packet
	for _, p := range pkts {
		dup = append(dup, p)
		if rng.Float64() < 0.05 {
			dup = append(dup, p)
		}
	}
	out = append(out, damaged{name: "duplicate5pct", pkts: dup, untouched: func(*event.Request) bool { return true }, minShare: 1})

	cut := len(pkts) * 3 / 10
	cutAt := pkts[cut].ci.Timestamp
	out = append(out, damaged{name: "cut-first-30pct", pkts: pkts[cut:],
		untouched: func(r *event.Request) bool { return r.Arrival.After(cutAt) }, minShare: 0.5})
	return out
}

// checkDamaged decodes a damaged capture and compares with the clean one:
// every untouched request must be decoded exactly as from the clean capture.
func checkDamaged(t *testing.T, port int, clean []*event.Request, path string, untouched func(*event.Request) bool, minShare float64) {
	t.Helper()
	got, res := decode(t, port, path)
	t.Logf("%s", res.FormatFooter())
	byKey := index(got)
	var want, exact int
	for _, c := range clean {
		if !untouched(c) {
			continue
		}
		want++
		g, ok := byKey[reqKey{c.Client, c.CorrelationID}]
		if !ok {
			t.Errorf("untouched request lost: %s corr %d from %s at %s", c.API, c.CorrelationID, c.Client, c.Arrival.Format(time.RFC3339Nano))
			continue
		}
		if diff := sameRequest(c, g); diff != "" {
			t.Errorf("untouched request %s corr %d from %s decoded differently: %s", c.API, c.CorrelationID, c.Client, diff)
			continue
		}
		exact++
	}
	share := float64(want) / float64(len(clean))
	t.Logf("%d of %d clean requests untouched by the damage (%.1f%%), %d decoded exactly", want, len(clean), 100*share, exact)
	if share < minShare {
		t.Errorf("only %.1f%% of requests counted as untouched; want at least %.0f%%: the damage check is too loose", 100*share, 100*minShare)
	}
}

func sameRequest(a, b *event.Request) string {
	switch {
	case a.API != b.API || a.APIVersion != b.APIVersion:
		return "api " + b.API
	case a.Answered != b.Answered:
		return "answered differs"
	case math.Abs(a.LatencyMs-b.LatencyMs) > 0.001 || !a.Arrival.Equal(b.Arrival):
		return fmt.Sprintf("times differ: arrival %s end %s, want %s %s", b.Arrival.Format(time.RFC3339Nano),
			b.End.Format(time.RFC3339Nano), a.Arrival.Format(time.RFC3339Nano), a.End.Format(time.RFC3339Nano))
	case b.Partial:
		return "marked partial"
	case len(a.Partitions) != len(b.Partitions):
		return "partition count differs"
	}
	for i := range a.Partitions {
		pa, pb := a.Partitions[i], b.Partitions[i]
		// A capture that lost the Metadata response naming a topic id
		// can only print the id (Produce/Fetch v13+).
		sameTopic := pa.Topic == pb.Topic || (pa.Topic == "" || pb.Topic == "") && pa.TopicID != "" && pa.TopicID == pb.TopicID
		if !sameTopic || pa.Partition != pb.Partition || pa.Records != pb.Records || len(pa.MessageIDs) != len(pb.MessageIDs) {
			return fmt.Sprintf("partition %+v, want %+v", pb, pa)
		}
		for j := range pa.MessageIDs {
			if pa.MessageIDs[j] != pb.MessageIDs[j] {
				return "message ids differ"
			}
		}
	}
	return ""
}

// testDamagedCaptures derives damaged captures from a clean one and checks
// that the decoder neither crashes nor loses what the damage did not touch.
func testDamagedCaptures(t *testing.T, run capturedRun, clean []*event.Request) {
	pkts, link := readPackets(t, run.pcap)
	dir := t.TempDir()
	for _, d := range derive(pkts) {
		t.Run(d.name, func(t *testing.T) {
			path := filepath.Join(dir, d.name+".pcap")
			writePackets(t, path, link, d.pkts)
			if run.keep != "" {
				copyFile(t, path, filepath.Join(run.keep, d.name+".pcap"))
			}
			checkDamaged(t, run.port, clean, path, d.untouched, d.minShare)
		})
	}
	t.Run("truncated", func(t *testing.T) {
		data, err := os.ReadFile(run.pcap)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "truncated.pcap")
		if err := os.WriteFile(path, data[:len(data)*7/10], 0o644); err != nil {
			t.Fatal(err)
		}
		_, res := decode(t, run.port, path)
		if len(res.Warnings) != 1 {
			t.Fatalf("want one truncation warning, got %v", res.Warnings)
		}
		t.Logf("warning: %v", res.Warnings[0])
		// Requests answered before the last complete packet are intact.
		full, _ := readPacketsUpTo(t, path)
		checkDamaged(t, run.port, clean, path, func(r *event.Request) bool {
			return r.Answered && r.End.Before(full)
		}, 0.5)
	})
}

// readPacketsUpTo returns the timestamp of the last packet that can be read
// completely from a truncated pcap.
func readPacketsUpTo(t *testing.T, path string) (time.Time, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	n := 0
	for {
		_, ci, err := r.ReadPacketData()
		if err != nil {
			return last, n
		}
		last, n = ci.Timestamp, n+1
	}
}
