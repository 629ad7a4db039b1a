package explain

import (
	"fmt"
	"slices"

	"github.com/kscope-dev/kscope/internal/event"
)

// CauseNetwork: the network held the request up: its own bytes were slow
// to arrive (a slow or lossy link, a sender short of window), or, with TCP
// in trouble on its connection (retransmissions, a zero window), its
// response left long after the broker had appended its records.
const CauseNetwork = "network"

func init() {
	register(cause{
		name:  CauseNetwork,
		order: 60,
		short: "network",
		help: "its bytes were slow to arrive: retransmissions, zero\n" +
			"windows, a slow link (the capture's TCP evidence)",
		// The spans after its appends are the network's only where
		// none of these held the broker's own threads.
		after: []string{CauseCPUStarved, CauseNetworkThreadBlocked, CauseParkWait},
		measure: func(m *measuring) measured {
			brokerHeld := slices.Concat(m.of(CauseCPUStarved).ivs, m.of(CauseNetworkThreadBlocked).ivs, m.of(CauseParkWait).ivs)
			return network(m.r, m.reqCtx, m.sw.ownEnd, m.replicating, brokerHeld)
		},
		inherited: true,
		detail:    func(f *Finding) string { return networkDetail(f) + alsoDetail(f) },
	})
}

// network measures the time the network held the request:
//
//   - its arrival, first byte to the latest byte at the capture point
//     (a hole filled by a retransmission completes it only then), less
//     the part it was queued behind the previous request on its
//     connection (that part of the arrival cost nothing): BrokerMs
//     starts at the later of the two, so the span from the end of the
//     queueing to it is arrival; not when the broker's receive window closed meanwhile
//     (the broker did not read it: see cpuStarved and
//     networkThreadBlocked, which then start from its arrival);
//   - when the capture saw the broker retransmit or the client close its
//     window during the request, the time from its own appends' end to
//     its response's end: the response was ready and TCP held it (say, a
//     retransmission timeout while the client's ACKs queued behind its
//     data). The client's retransmissions do not hold a response: they
//     are the arrival's, measured above (a hole they fill completes the
//     request only then). Not with acks=all while followers fetch: that
//     gap is replication's.
//   - when its response left right after the client acknowledged the
//     broker's earlier data, which had waited for that ACK
//     (ResponseAckWaitMs), the wait after its own appends' end: TCP held
//     the response.
//   - while queued behind an earlier request on its connection, the time
//     the network held that one.
//
// The two spans after its appends are the network's only where the
// broker's threads were not themselves held (brokerHeld: starved of CPU,
// the network thread blocked): a response the network thread could not
// get a CPU to send was not held by TCP, whatever TCP did meanwhile.
func network(r *event.Request, c *reqCtx, ownEnd int64, replicating bool, brokerHeld []interval) measured {
	m := measured{cause: CauseNetwork}
	// The arrival after the request ahead's response left: queueing
	// hid the rest of it.
	if from := c.A + int64(max(r.QueuedMs, 0)*1e6); c.brokerStart > from && r.BrokerZeroWindows == 0 {
		m.ivs = append(m.ivs, interval{from, c.brokerStart})
	}
	if r.ResponseRetransmits+r.ZeroWindows > 0 && ownEnd > 0 && ownEnd < c.E && !replicating {
		m.ivs = append(m.ivs, minus(interval{max(ownEnd, c.brokerStart), c.E}, brokerHeld)...)
	}
	if r.ResponseAckWaitMs > 0 {
		left := c.E - int64(r.ResponseMs*1e6)
		from := max(left-int64(r.ResponseAckWaitMs*1e6), c.brokerStart, ownEnd)
		if from < left {
			m.ivs = append(m.ivs, minus(interval{from, left}, brokerHeld)...)
		}
	}
	m.ivs = append(m.ivs, c.queued[CauseNetwork]...)
	m.ns = min(unionLen(m.ivs), c.L)
	return m
}

func networkDetail(f *Finding) string {
	s := fmt.Sprintf("the network held it %.1f ms", f.Shares[CauseNetwork])
	if f.QueuedMs <= 0 && f.LatencyMs > f.BrokerMs {
		s += fmt.Sprintf(": its %d-byte request took %.1f ms to arrive (first to latest byte at the capture point)", f.RequestBytes, f.LatencyMs-f.BrokerMs)
	}
	if f.ResponseAckWaitMs > 0 {
		s += fmt.Sprintf("; its response left only when the client acknowledged the broker's earlier data, %.1f ms in flight", f.ResponseAckWaitMs)
	}
	if n := f.Retransmits + f.ResponseRetransmits; n > 0 || f.ZeroWindows > 0 {
		s += fmt.Sprintf("; TCP on its connection: %d retransmitted segments (%d from the broker), %d zero windows", n, f.ResponseRetransmits, f.ZeroWindows)
	}
	if f.QueuedBehind != nil && f.QueuedBehind.Cause == CauseNetwork {
		s += fmt.Sprintf("; queued behind request %d, held by the network too", f.QueuedBehind.CorrelationID)
	}
	return s
}
