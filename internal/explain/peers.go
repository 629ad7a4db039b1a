package explain

import (
	"github.com/kscope-dev/kscope/internal/clockalign"
)

// Peer is another broker's recording, read together with the one
// explained: a leader's wait for a follower is followed onto the
// follower's own evidence (follower.go).
type Peer struct {
	// NodeID is the peer broker's node id.
	NodeID int32
	// Index is its traced I/O, scheduling and JVM evidence.
	Index *Index
	// Scan is the first pass over its requests: the replica fetches its
	// capture saw.
	Scan *Scan
	// Clock is its clock against the explained recording's (OffsetNs:
	// the peer's minus ours).
	Clock clockalign.Estimate
}

// SetPeers gives the explainer the other brokers' recordings. Their
// indexes are built here.
func (e *Explainer) SetPeers(peers []*Peer) {
	e.peers = make(map[int32]*Peer, len(peers))
	for _, p := range peers {
		p.Index.Build()
		e.peers[p.NodeID] = p
	}
}

// exchangeKey names one request on one connection.
type exchangeKey struct {
	client, broker string
	corr           int32
}

// fetchStamp is a replica Fetch request as one capture saw it: when its
// first byte passed, and its response's first and last byte (unix ns).
type fetchStamp struct {
	arrival, respStart, end int64
	replica                 int32
}

// maxStamps bounds the replica fetches a scan keeps for the join with
// other brokers' recordings (about 60 bytes each).
const maxStamps = 4 << 20

// addStamp keeps an answered replica fetch line's times, when it can be
// read without decoding the line.
func (s *Scan) addStamp(line []byte, client []byte, replica int32, arrival, end int64) {
	if len(s.stamps) >= maxStamps {
		s.StampsDropped++
		return
	}
	corr, ok1 := scanInt(line, `"correlation_id":`)
	respMs, ok2 := scanFloat(line, `"response_ms":`)
	broker, ok3 := scanString(line, `"broker":"`)
	if !ok1 || !ok2 || !ok3 {
		return
	}
	if s.stamps == nil {
		s.stamps = make(map[exchangeKey]fetchStamp)
	}
	k := exchangeKey{client: s.intern(client), broker: s.intern(broker), corr: int32(corr)}
	s.stamps[k] = fetchStamp{arrival: arrival, respStart: end - int64(respMs*1e6), end: end, replica: replica}
}

// countBroker counts the broker address of a new produce connection: the
// one most produced to is the recorded broker's own.
func (s *Scan) countBroker(line []byte) {
	b, ok := scanString(line, `"broker":"`)
	if !ok {
		return
	}
	if s.produceTo == nil {
		s.produceTo = make(map[string]int)
	}
	s.produceTo[s.intern(b)]++
}

// Addr is the recorded broker's address: the one its capture saw most
// producers' connections go to ("" when it saw none).
func (s *Scan) Addr() string {
	var best string
	for a, n := range s.produceTo {
		if n > s.produceTo[best] || n == s.produceTo[best] && a < best {
			best = a
		}
	}
	return best
}

// NodeID infers the recorded broker's node id from its own replica
// fetches: those its capture saw sent to another broker's address carry
// its id. False when it saw none.
func (s *Scan) NodeID() (int32, bool) {
	own := s.Addr()
	counts := make(map[int32]int)
	for k, st := range s.stamps {
		if k.broker != own {
			counts[st.replica]++
		}
	}
	id, best := int32(-1), 0
	for r, n := range counts {
		if n > best || n == best && r < id {
			id, best = r, n
		}
	}
	return id, best > 0
}

// ClockOffset estimates b's clock minus a's from the replica fetches that
// both captures saw (aID and bID are their brokers' node ids: the one
// whose id a fetch carries is its client).
func ClockOffset(a, b *Scan, aID, bID int32) (clockalign.Estimate, bool) {
	var est clockalign.Estimator
	for k, sa := range a.stamps {
		sb, ok := b.stamps[k]
		if !ok || sa.replica != sb.replica {
			continue
		}
		switch sa.replica {
		case aID: // a's fetcher, b answers: server − client = b − a
			est.Add(clockalign.Exchange{ClientRequest: sa.arrival, ServerRequest: sb.arrival, ServerResponse: sb.respStart, ClientResponse: sa.respStart})
		case bID: // b's fetcher, a answers: server − client = a − b
			est.AddReversed(clockalign.Exchange{ClientRequest: sb.arrival, ServerRequest: sa.arrival, ServerResponse: sa.respStart, ClientResponse: sb.respStart})
		}
	}
	return est.Estimate()
}

// ClusterClocks aligns the clocks of several recordings' scans (ids:
// their brokers' node ids) to the first one's: offsets[i] is recording
// i's clock minus recording 0's. A recording that shares no replica
// fetch with the first is aligned through one that does (the error
// bounds add up); ok[i] is false when no chain reaches it.
func ClusterClocks(scans []*Scan, ids []int32) (offsets []clockalign.Estimate, ok []bool) {
	n := len(scans)
	offsets, ok = make([]clockalign.Estimate, n), make([]bool, n)
	if n == 0 {
		return offsets, ok
	}
	// direct[j][i]: i's clock minus j's, from the fetches between them.
	direct := make([][]*clockalign.Estimate, n)
	for j := range n {
		direct[j] = make([]*clockalign.Estimate, n)
	}
	for j := range n {
		for i := j + 1; i < n; i++ {
			if est, found := ClockOffset(scans[j], scans[i], ids[j], ids[i]); found && est.Agreeing > 0 {
				rev := est.Reverse()
				direct[j][i], direct[i][j] = &est, &rev
			}
		}
	}
	// Shortest paths by error bound from recording 0 (Bellman-Ford over
	// a handful of brokers).
	ok[0] = true
	for range n {
		changed := false
		for j := range n {
			for i := 1; i < n; i++ {
				d := direct[j][i]
				if !ok[j] || d == nil {
					continue
				}
				est := *d
				if j != 0 {
					est = offsets[j].Combine(*d)
				}
				if !ok[i] || est.ErrorNs < offsets[i].ErrorNs {
					offsets[i], ok[i], changed = est, true, true
				}
			}
		}
		if !changed {
			break
		}
	}
	return offsets, ok
}
