package source

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/wire"
)

// fakeBroker answers every request on its connections with an empty
// response of the request's API and version (header v1 for flexible
// versions, except ApiVersions).
func fakeBroker(t *testing.T, ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			var size [4]byte
			for {
				if _, err := io.ReadFull(c, size[:]); err != nil {
					return
				}
				body := make([]byte, binary.BigEndian.Uint32(size[:]))
				if _, err := io.ReadFull(c, body); err != nil {
					return
				}
				key, ver := int16(binary.BigEndian.Uint16(body)), int16(binary.BigEndian.Uint16(body[2:]))
				resp := kmsg.ResponseForKey(key)
				resp.SetVersion(ver)
				out := append([]byte{0, 0, 0, 0}, body[4:8]...) // size, correlation id
				if resp.IsFlexible() && key != 18 {
					out = append(out, 0) // no tagged fields
				}
				out = resp.AppendTo(out)
				binary.BigEndian.PutUint32(out, uint32(len(out)-4))
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		}()
	}
}

// client sends n requests of req on one connection, pipelining up to
// depth, and returns its local port.
func client(t *testing.T, addr string, req kmsg.Request, n, depth int) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("live-test"))
	var size [4]byte
	read := func() {
		if _, err := io.ReadFull(c, size[:]); err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
			t.Fatal(err)
		}
	}
	inflight := 0
	for corr := range n {
		if _, err := c.Write(f.AppendRequest(nil, req, int32(corr))); err != nil {
			t.Fatal(err)
		}
		if inflight++; inflight == depth {
			read()
			inflight--
		}
	}
	for ; inflight > 0; inflight-- {
		read()
	}
	_, port, _ := net.SplitHostPort(c.LocalAddr().String())
	return port
}

// TestLiveDecodesRequests runs Kafka frames over real TCP on lo through
// Live: every request once, answered, with its correlation id, and the raw
// packets written to pcapng decode to the same requests with the same
// times.
func TestLiveDecodesRequests(t *testing.T) {
	labtest.RequireRoot(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go fakeBroker(t, ln)
	_, ps, _ := net.SplitHostPort(ln.Addr().String())
	port, _ := strconv.Atoi(ps)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var pcap bytes.Buffer
	pw, err := capture.NewPcapNGWriter(&pcap, layers.LinkTypeEthernet, capture.DefaultSnapLen)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		reqs []*event.Request
		res  Result
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var reqs []*event.Request
		cfg := wire.DefaultConfig()
		cfg.Ports = nil // taken from the capture config
		res, err := Live(ctx, capture.LiveConfig{Interface: "lo", Ports: []uint16{uint16(port)}}, Options{Wire: cfg},
			func(r *event.Request) { reqs = append(reqs, r) },
			func(link layers.LinkType, ci gopacket.CaptureInfo, data []byte) {
				if link != layers.LinkTypeEthernet {
					t.Errorf("link type %v on lo", link)
				}
				if err := pw.WritePacket(ci, data); err != nil {
					t.Error(err)
				}
			})
		done <- result{reqs, res, err}
	}()

	// The socket opens in the goroutine: start once it captures.
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	labtest.WaitLiveSocket(ctx, t, lo.Index, func() error {
		select {
		case r := <-done:
			return fmt.Errorf("Live returned %v", r.err)
		default:
			return nil
		}
	})

	const n = 300
	want := map[string]int{} // client port → requests
	meta := &kmsg.MetadataRequest{Version: 12}
	for _, depth := range []int{1, 5, 20} {
		want[client(t, ln.Addr().String(), meta, n, depth)] = n
	}
	time.Sleep(100 * time.Millisecond)
	stop := time.Now()
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Live did not return after cancel")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if took := time.Since(stop); took > 2*time.Second {
		t.Errorf("Live returned %v after cancel", took)
	}
	t.Logf("footer:\n%s", r.res.FormatFooter())
	if !strings.Contains(r.res.FormatFooter(), "live on lo") || !strings.Contains(r.res.FormatFooter(), "dropped by the kernel") {
		t.Errorf("footer does not say it was live")
	}

	type key struct {
		port string
		corr int32
	}
	seen := map[key]int{}
	got := map[string]int{}
	for _, q := range r.reqs {
		_, p, _ := net.SplitHostPort(q.Client)
		seen[key{p, q.CorrelationID}]++
		got[p]++
		if q.API != "Metadata" || q.APIVersion != 12 || !q.Answered || q.ClientID != "live-test" {
			t.Errorf("request %+v", q)
		}
	}
	for k, c := range seen {
		if c > 1 {
			t.Errorf("request %+v reported %d times", k, c)
		}
	}
	if len(r.reqs) != len(want)*n {
		t.Errorf("%d requests decoded, %d sent", len(r.reqs), len(want)*n)
	}
	for p, c := range want {
		if got[p] != c {
			t.Errorf("client port %s: %d requests decoded, sent %d", p, got[p], c)
		}
	}
	w := r.res.Wire
	if w.SkippedBytes != 0 || w.Unanswered != 0 || w.Unpaired != 0 || w.DecodeErrors != 0 {
		t.Errorf("wire stats %+v", w)
	}
	c := r.res.Capture
	if c.KernelDrops != 0 || c.KernelPackets != c.Packets || c.Packets == 0 {
		t.Errorf("capture stats %+v", c)
	}

	// The packets handed to raw decode, from a pcapng file, to the same
	// requests at the same (nanosecond) times.
	if err := pw.Flush(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "live.pcapng")
	if err := os.WriteFile(path, pcap.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := wire.DefaultConfig()
	cfg.Ports = []uint16{uint16(port)}
	var fromFile []*event.Request
	res, err := ReadFiles([]string{path}, Options{Wire: cfg}, func(q *event.Request) { fromFile = append(fromFile, q) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Capture.Packets != c.Packets || len(fromFile) != len(r.reqs) {
		t.Fatalf("pcapng: %d packets, %d requests; live: %d packets, %d requests", res.Capture.Packets, len(fromFile), c.Packets, len(r.reqs))
	}
	for i, q := range fromFile {
		l := r.reqs[i]
		if q.Client != l.Client || q.CorrelationID != l.CorrelationID || !q.Arrival.Equal(l.Arrival) || !q.End.Equal(l.End) {
			t.Errorf("request %d: from pcapng %s corr %d %v–%v, live %s corr %d %v–%v", i,
				q.Client, q.CorrelationID, q.Arrival, q.End, l.Client, l.CorrelationID, l.Arrival, l.End)
			break
		}
	}
}

// TestLiveCancelledBeforeTraffic: a capture whose context ends at once
// returns promptly with empty counters; a missing interface is an error.
func TestLiveCancelledBeforeTraffic(t *testing.T) {
	labtest.RequireRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	res, err := Live(ctx, capture.LiveConfig{Interface: "lo"}, Options{Wire: wire.DefaultConfig()}, func(*event.Request) {}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %v", took)
	}
	if res.Live != "lo" || res.Wire.Requests != 0 {
		t.Errorf("result %+v", res)
	}
	if _, err := Live(context.Background(), capture.LiveConfig{Interface: "no-such-if0"}, Options{}, func(*event.Request) {}, nil); err == nil {
		t.Error("no error for a missing interface")
	}
}
