package wire

import "time"

// tcpSignals remembers, for one direction of a connection, when the
// capture saw TCP in trouble: segments carrying bytes already captured
// (retransmissions: a loss, or a timeout that fired while the ACK was
// late) and zero-window advertisements (the receiver's buffer full). A
// request counts those seen between its arrival and its end: evidence
// that the network, not the broker, held it up.
//
// The times are kept in a small ring (no allocation per packet): a
// request looks back only over its own life, so the newest suffice.
type tcpSignals struct {
	retrans, zeroWin signalRing
}

// signalRing holds the capture times (unix ns) of the newest events.
type signalRing struct {
	at [32]int64
	n  int // events ever recorded
}

func (r *signalRing) add(t time.Time) {
	r.at[r.n%len(r.at)] = t.UnixNano()
	r.n++
}

// count is how many recorded events fall in [a, b] (of the newest kept).
func (r *signalRing) count(a, b time.Time) int {
	lo, hi := a.UnixNano(), b.UnixNano()
	n := 0
	for i := 0; i < min(r.n, len(r.at)); i++ {
		if t := r.at[i]; t >= lo && t <= hi {
			n++
		}
	}
	return n
}

// ackClock finds, from the capture alone, responses that TCP held until
// the client acknowledged the broker's earlier data: after a
// retransmission timeout the broker's congestion window is one segment
// or two, so while the client's ACKs are late (queued behind its own
// data on a slow link) each response waits for an ACK of the previous
// ones, long after the broker wrote it to the socket. Such a response
// leaves within microseconds of the ACK that let it go: one that
// acknowledged everything in flight, or, while the broker is recovering
// from a loss (it retransmitted since its data began to wait), one that
// acknowledged part of it or a duplicate ACK (whose SACK blocks tell the
// sender more arrived). Outside recovery a partial ACK proves
// nothing: with a healthy window the broker was not waiting for it.
type ackClock struct {
	have           bool
	sndNxt, sndUna uint32    // broker to client: highest byte sent + 1, highest acknowledged
	inflight       bool      // broker bytes not yet acknowledged
	since          time.Time // ...since then
	resent         bool      // the broker retransmitted since then
	// lastAck is the last ACK that could have released a held send, and
	// waiting since when the data it acknowledged had waited.
	lastAck, waiting time.Time
	held             [8]heldSend
	n                int
}

// heldSend is a broker segment that left right after a late ACK.
type heldSend struct{ at, since int64 }

// Thresholds of ackClock: a send counts as held when it left within
// ackClockSlack of an ACK that ended a wait of at least ackClockMinWait.
const (
	ackClockSlack   = 200 * time.Microsecond
	ackClockMinWait = time.Millisecond
)

// brokerData notes a broker segment with n payload bytes.
func (a *ackClock) brokerData(seq uint32, n int, ts time.Time) {
	if n == 0 {
		return
	}
	if !a.lastAck.IsZero() && ts.Sub(a.lastAck) <= ackClockSlack && !ts.Before(a.lastAck) && a.lastAck.Sub(a.waiting) >= ackClockMinWait {
		a.held[a.n%len(a.held)] = heldSend{ts.UnixNano(), a.waiting.UnixNano()}
		a.n++
	}
	end := seq + uint32(n)
	switch {
	case !a.have:
		a.have, a.sndNxt, a.sndUna = true, end, seq
	case int32(end-a.sndNxt) > 0:
		a.sndNxt = end
	case a.inflight:
		a.resent = true // bytes sent before: a retransmission
	}
	if !a.inflight {
		a.inflight, a.since, a.resent = true, ts, false
	}
}

// clientAck notes an acknowledgement from the client, on a segment
// with n payload bytes.
func (a *ackClock) clientAck(ack uint32, n int, ts time.Time) {
	if !a.have {
		return
	}
	if int32(ack-a.sndUna) <= 0 {
		// A duplicate ACK (one without data: a data segment repeats its
		// ACK for nothing) lets a recovering sender out a new segment
		// too: its SACK says more arrived.
		if n == 0 && a.inflight && a.resent {
			a.lastAck, a.waiting = ts, a.since
		}
		return
	}
	a.sndUna = ack
	if !a.inflight {
		return
	}
	switch {
	case int32(a.sndNxt-ack) <= 0:
		a.inflight = false
		a.lastAck, a.waiting = ts, a.since
	case a.resent:
		// In recovery: the rest stays in flight, still since a.since.
		a.lastAck, a.waiting = ts, a.since
	}
}

// heldFor is how long the broker segment captured at first had waited
// for an acknowledgement before it could leave (0: it had not).
func (a *ackClock) heldFor(first time.Time) time.Duration {
	at := first.UnixNano()
	for i := 0; i < min(a.n, len(a.held)); i++ {
		if h := a.held[i]; h.at == at {
			return time.Duration(h.at - h.since)
		}
	}
	return 0
}
