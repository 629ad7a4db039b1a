package grouphold

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// FuzzSplit feeds arbitrary group request streams (each 12 bytes: API,
// member, generation, error, send and response times) and checks that
// every split adds up, with no negative part.
func FuzzSplit(f *testing.F) {
	f.Add([]byte("\x0b\x01\x01\x00\x00\x00\x00\x10\x00\x00\x00\x05\x0e\x01\x01\x00\x00\x00\x00\x20\x00\x00\x00\x01"))
	f.Add(make([]byte, 48))
	f.Fuzz(func(t *testing.T, data []byte) {
		apis := []int16{apiJoinGroup, apiSyncGroup, apiHeartbeat, apiLeaveGroup, apiOffsetCommit, apiCGHeartbeat, 0}
		var reqs []*event.Request
		for len(data) >= 12 && len(reqs) < 256 {
			b := data[:12]
			data = data[12:]
			r := req(apis[int(b[0])%len(apis)], string(rune('a'+b[1]%8)), int32(int8(b[2])), time.Duration(binary.BigEndian.Uint32(b[4:]))*time.Microsecond,
				time.Duration(binary.BigEndian.Uint32(b[8:]))*time.Microsecond, int16(b[3]%4)*27)
			if b[1]&0x80 != 0 {
				r.GroupResult.Leader = string(rune('a' + b[1]%3))
			}
			r.BrokerMs = float64(int8(b[3])) // sometimes more than the latency, or negative
			reqs = append(reqs, r)
		}
		sp := New()
		for _, r := range reqs {
			sp.Add(r)
		}
		for _, r := range reqs {
			s, ok := sp.Split(r)
			if !ok {
				continue
			}
			if s.HoldMs < 0 || s.OwnMs < -1e-9 || s.TotalMs < 0 || s.TotalMs-s.HoldMs-s.OwnMs > 1e-6 || s.HoldMs-s.TotalMs > 1e-6 {
				t.Fatalf("split of %+v: %+v", r, s)
			}
		}
	})
}
