package explain

import (
	"fmt"
	"slices"
)

// measureResponseSend measures the response's leaving: from its first
// byte to its last. For a fetch, without its reads from disk, and only
// what its bytes should not have taken (fetchsplit's send rate): a large
// response takes its time.
func measureResponseSend(m *measuring) measured {
	response := min(int64(m.r.ResponseMs*1e6), m.L)
	if response <= 0 {
		return measured{ns: response}
	}
	ivs := []interval{{m.E - response, m.E}}
	if m.fetch == nil {
		return measured{ns: response, ivs: ivs}
	}
	ivs = minus(ivs[0], slices.Concat(m.of(CauseDiskRead).ivs, m.of(CauseNetworkThreadBlocked).ivs))
	sp := m.fetch.split
	slow := int64(max(sp.AbnormalMs-sp.OtherMs-sp.DiskMs, 0) * 1e6)
	ivs = keepLast(ivs, slow)
	return measured{ns: unionLen(ivs), ivs: ivs}
}

// keepLast keeps the last n nanoseconds of sorted, disjoint ivs.
func keepLast(ivs []interval, n int64) []interval {
	var out []interval
	for i := len(ivs) - 1; i >= 0 && n > 0; i-- {
		iv := ivs[i]
		iv.a = max(iv.a, iv.b-n)
		n -= iv.b - iv.a
		out = append([]interval{iv}, out...)
	}
	return out
}

// CauseResponseSend: the response's bytes took most of the request's time
// to leave (the client, or the network, slow to take them).
const CauseResponseSend = "response-send"

func init() {
	register(cause{
		name:  CauseResponseSend,
		order: 50,
		short: "response",
		help:  "the response took most of the time to leave",
		// A fetch's response leaves while its data is read, and its
		// network thread sends it: the time it read from disk is
		// disk-read's, the time the thread was stuck elsewhere
		// network-thread-blocked's.
		after:   []string{CauseDiskRead, CauseNetworkThreadBlocked},
		measure: measureResponseSend,
		detail: func(f *Finding) string {
			return fmt.Sprintf("the %.1f ms response took %.1f ms to leave", f.LatencyMs, f.ResponseMs)
		},
	})
}
