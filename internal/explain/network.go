package explain

import (
	"fmt"

	"github.com/kscope-dev/kscope/internal/event"
)

// CauseNetwork: the request's own bytes were slow to arrive: from its
// first byte at the capture point to its last, while nothing else held
// the connection (a slow or lossy link, a sender short of window).
const CauseNetwork = "network"

// network measures the time the request took to arrive, when the broker
// could only start on it once it had: its first to last byte, if it was
// not queued behind the previous request on its connection (then the
// arrival overlapped that wait and cost nothing). BrokerMs starts at the
// later of the last byte and the previous response's end, so with no
// queueing the span before it is all transfer.
func network(r *event.Request, c *reqCtx) measured {
	m := measured{cause: CauseNetwork}
	if r.QueuedMs > 0 || c.brokerStart <= c.A {
		return m
	}
	m.ivs = []interval{{c.A, c.brokerStart}}
	m.ns = c.brokerStart - c.A
	return m
}

func networkDetail(f *Finding) string {
	return fmt.Sprintf("its %d-byte request took %.1f ms to arrive (first to last byte at the capture point)", f.RequestBytes, f.Shares.NetworkMs)
}
