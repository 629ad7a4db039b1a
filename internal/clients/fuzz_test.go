package clients

import (
	"io"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/testkit/reqlines"
)

// FuzzAggregate feeds any requests (JSON Lines, as a recording holds
// them) through an aggregator with small bounds and writes its report in
// every format: no panic, the bounds hold, and every request is counted
// once.
func FuzzAggregate(f *testing.F) {
	p := produce("10.0.0.2:5000", "p", 9, 0, 100, 20000, "zstd", 3)
	p.Principal = "alice"
	v := req("10.0.0.2:5000", "p", apiVersionsKey, 3, 0)
	v.SoftwareName, v.SoftwareVersion = "x\x1b[2J", "1"
	g := req("10.0.0.3:5001", "c", apiJoinGroup, 9, time.Second)
	g.Group = event.Group{ID: "grp", MemberID: "m"}
	fe := req("10.0.0.3:5001", "c", apiFetch, 12, 2*time.Second)
	fe.Fetch = event.FetchParams{MaxWaitMs: 500, MinBytes: 1}
	f.Add(reqlines.Of(v, p, g, fe))
	f.Add(reqlines.Of(req("[::1]:1", "", -3, -7, -time.Hour), req("bad", "\xff", 32767, 32767, time.Hour)))
	f.Fuzz(func(t *testing.T, data []byte) {
		a := New(Options{MaxClients: 3, MaxConnections: 4, Target: rejectBelow{apiProduce: 3, apiFetch: 4}, TargetName: "4.0"})
		var n int64
		reqlines.Each(data, func(r *event.Request) {
			a.Add(r)
			n++
		})
		rep := a.Report()
		if len(rep.Clients) > 4 || rep.Requests != n {
			t.Fatalf("%d rows (bound 3 + other), %d requests counted of %d", len(rep.Clients), rep.Requests, n)
		}
		var sum int64
		for _, c := range rep.Clients {
			sum += c.Requests
		}
		if sum != n {
			t.Fatalf("rows hold %d requests of %d", sum, n)
		}
		for _, format := range Formats() {
			if err := Write(io.Discard, rep, format, 2); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
		}
	})
}
