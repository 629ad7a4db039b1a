package explain

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// FollowerLeader is a follower cause: its fetches waited in the leader
// (the fetch purgatory, or the leader's own reading) for most of the
// wait, not on the follower or between the two.
const FollowerLeader = "leader"

// FollowerWait is the follower's side of a leader's wait for one of its
// fetches, from both brokers' recordings: the wait (from the end of the
// leader's own append to the arrival of the follower's fetch that passed
// the request's records) split between the leader, the network and the
// follower, and what the follower's share was spent on. Times are on the
// leader's clock; the evidence keeps the follower's own.
//
// A follower's replica fetcher has one fetch in flight per leader: it
// sends a fetch, the leader answers (at once, or when data arrives), the
// fetcher appends what came and sends the next. So the connection's time
// splits without overlap into the fetch waiting in the leader, the
// response and the request in flight, and the follower between
// receiving a response and sending its next fetch.
type FollowerWait struct {
	Broker int32 `json:"broker"`
	// Cause is what most of the wait went to: slow-write (the follower's
	// appends), network, cpu-starved (its fetcher thread waited for a
	// CPU), gc-pause or safepoint (its JVM stood still), leader (the
	// fetch waited in the leader), or unexplained.
	Cause string `json:"cause"`
	// Root is RootJournal when its appends overlapped journal commits on
	// its device for most of their time.
	Root string `json:"root,omitempty"`
	// Frozen: its fetcher thread slept waiting for the file system to be
	// writable (a frozen file system: sb_start_write).
	Frozen bool `json:"frozen,omitempty"`

	WaitMs     float64 `json:"wait_ms"`
	LeaderMs   float64 `json:"leader_ms"`
	NetworkMs  float64 `json:"network_ms"`
	FollowerMs float64 `json:"follower_ms"`
	// AppendMs, CPUWaitMs and PauseMs are parts of FollowerMs: its
	// fetcher thread's writes to partition logs, its waits for a CPU,
	// and its JVM's stop-the-world pauses.
	AppendMs  float64 `json:"append_ms"`
	CPUWaitMs float64 `json:"cpu_wait_ms,omitempty"`
	PauseMs   float64 `json:"pause_ms,omitempty"`
	// Fetches is how many of its fetches the wait spanned.
	Fetches int `json:"fetches"`
	// Partition is the request's partition the fetch passed, FetcherTID
	// the follower's thread that appended it.
	Partition  string `json:"partition"`
	FetcherTID int    `json:"fetcher_tid,omitempty"`

	// Evidence from the follower's recording (its clock), the largest
	// first.
	Appends     []event.Write         `json:"appends,omitempty"`
	Commits     []event.JournalCommit `json:"commits,omitempty"`
	KernelWaits []event.KernelWait    `json:"kernel_waits,omitempty"`
	RunDelays   []event.RunDelay      `json:"run_delays,omitempty"`
	Pauses      []event.JVMPause      `json:"pauses,omitempty"`

	// ClockOffsetMs is the follower's clock minus the leader's, known to
	// ± ClockErrorMs.
	ClockOffsetMs float64 `json:"clock_offset_ms"`
	ClockErrorMs  float64 `json:"clock_error_ms"`
	// Unmatched says which of its fetches the follower's capture lacked
	// (their network and follower parts are then one unsplit part).
	Unmatched string `json:"unmatched,omitempty"`
}

// maxFollowerEvidence bounds each evidence list of a FollowerWait, and
// maxConnFetches the fetches followed back on the connection.
const (
	maxFollowerEvidence = 4
	maxConnFetches      = 256
)

// connExchange is one fetch on the follower's connection to the leader,
// on the leader's clock: its arrival and response at the leader, and when
// it left and its response arrived at the follower (matched false when
// the follower's capture lacked it).
type connExchange struct {
	arrA, respA, endA int64
	sentF, endF       int64
	matched           bool
}

// followerWait follows a leader's wait for a follower's fetch rf onto the
// follower's recording: nil without it. leader is the leader's address,
// ownEnd the end of the leader's own append of the request's records.
func (e *Explainer) followerWait(leader string, rf *ReplicaFetch, ownEnd int64) *FollowerWait {
	peer := e.peers[rf.Replica]
	if peer == nil {
		return nil
	}
	w := interval{ownEnd, rf.FetchArrival.UnixNano()}
	fw := &FollowerWait{Broker: rf.Replica, Partition: fmt.Sprintf("%s-%d", rf.Topic, rf.Partition),
		WaitMs: ms(max(w.b-w.a, 0)), ClockOffsetMs: ms(peer.Clock.OffsetNs), ClockErrorMs: ms(peer.Clock.ErrorNs)}
	if w.b <= w.a {
		fw.Cause = CauseUnexplained
		return fw
	}
	conn := e.connExchanges(peer, leader, rf, w)
	fw.Fetches = len(conn)
	var leaderIvs, netIvs, followerIvs []interval
	unmatched := 0
	for k, x := range conn {
		leaderIvs = append(leaderIvs, interval{x.arrA, x.respA})
		if x.matched {
			netIvs = append(netIvs, interval{x.respA, x.endF}, interval{x.sentF, x.arrA})
		} else {
			unmatched++
		}
		if k == 0 {
			continue
		}
		if prev := conn[k-1]; prev.matched && x.matched {
			followerIvs = append(followerIvs, interval{prev.endF, x.sentF})
		}
	}
	if unmatched > 0 {
		fw.Unmatched = fmt.Sprintf("%d of %d fetches not in broker %d's capture", unmatched, len(conn), rf.Replica)
	}
	// Each part within the wait.
	leaderIvs, netIvs, followerIvs = clipAll(leaderIvs, w), clipAll(netIvs, w), clipAll(followerIvs, w)
	fw.LeaderMs, fw.NetworkMs, fw.FollowerMs = ms(unionLen(leaderIvs)), ms(unionLen(netIvs)), ms(unionLen(followerIvs))
	e.followerEvidence(peer, fw, rf, followerIvs)
	fw.Cause = followerCause(fw, e.cfg.Share)
	return fw
}

// connExchanges lists the follower's fetches on rf's connection from the
// one in flight when the wait began (at w.a) to rf, in order, with both
// captures' times on the leader's clock.
func (e *Explainer) connExchanges(peer *Peer, leader string, rf *ReplicaFetch, w interval) []connExchange {
	ri := e.replicaIndex()
	list := ri.byID[rf.Replica]
	end, _ := slices.BinarySearchFunc(list, w.b+1, func(i int32, t int64) int { return cmp.Compare(e.fetches[i].arrival, t) })
	off := peer.Clock.OffsetNs
	var out []connExchange
	for k := end - 1; k >= 0 && len(out) < maxConnFetches; k-- {
		fr := &e.fetches[list[k]]
		if fr.client != rf.Client {
			continue
		}
		d := e.replicaFetch(ri, list[k])
		if d == nil || d.broker != leader {
			continue
		}
		x := connExchange{arrA: fr.arrival, respA: d.respStart, endA: fr.end}
		if st, ok := peer.Scan.stamps[exchangeKey{client: fr.client, broker: leader, corr: d.corr}]; ok {
			x.sentF, x.endF, x.matched = st.arrival-off, st.end-off, true
		}
		out = append(out, x)
		if fr.arrival <= w.a {
			break
		}
	}
	slices.Reverse(out)
	return out
}

// followerEvidence measures the follower's part of the wait (ivs, on the
// leader's clock) from its recording: its fetcher thread's appends, the
// journal commits and kernel waits under them, its waits for a CPU, and
// its JVM's pauses.
func (e *Explainer) followerEvidence(peer *Peer, fw *FollowerWait, rf *ReplicaFetch, ivs []interval) {
	if len(ivs) == 0 {
		return
	}
	x, off := peer.Index, peer.Clock.OffsetNs
	tid := fetcherThread(x, rf, ivs, off)
	fw.FetcherTID = int(tid)
	var appends, cpu, paused []interval
	var writes []int32
	for _, iv := range ivs {
		a, b := iv.a+off, iv.b+off
		if tid != 0 {
			for _, i := range x.writesOf(tid, a, b) {
				wr := &x.writes[i]
				appends = append(appends, clip(interval{wr.start - off, wr.end - off}, iv))
				if !slices.Contains(writes, i) {
					writes = append(writes, i)
				}
			}
			for _, d := range x.runDelaysOverlapping(int(tid), a, b) {
				cpu = append(cpu, clip(interval{d.Start.UnixNano() - off, d.End.UnixNano() - off}, iv))
				fw.RunDelays = append(fw.RunDelays, d)
			}
			for _, k := range x.waitsOverlapping(int(tid), a, b) {
				if !slices.ContainsFunc(fw.KernelWaits, func(o event.KernelWait) bool { return o.Start.Equal(k.Start) }) {
					fw.KernelWaits = append(fw.KernelWaits, k)
				}
			}
		}
		for _, p := range x.pausesOverlapping(a, b) {
			paused = append(paused, clip(interval{p.Start.UnixNano() - off, p.End.UnixNano() - off}, iv))
			if !slices.ContainsFunc(fw.Pauses, func(o event.JVMPause) bool { return o.Start.Equal(p.Start) }) {
				fw.Pauses = append(fw.Pauses, p)
			}
		}
	}
	fw.AppendMs, fw.CPUWaitMs, fw.PauseMs = ms(unionLen(appends)), ms(unionLen(cpu)), ms(unionLen(paused))
	slices.SortFunc(writes, func(a, b int32) int { return cmp.Compare(x.writes[b].dur(), x.writes[a].dur()) })
	seen := make(map[time.Time]bool)
	for _, i := range writes[:min(len(writes), maxFollowerEvidence)] {
		wr := &x.writes[i]
		fw.Appends = append(fw.Appends, x.toEvent(i))
		for _, c := range x.commitsOverlapping(x.strs[wr.dev], wr.start, wr.end) {
			cs, ce := commitSpan(&c)
			ov := clip(interval{cs, ce}, interval{wr.start, wr.end})
			if wr.dur() > 0 && float64(ov.b-ov.a) >= e.cfg.Share*float64(wr.dur()) && !seen[c.Start] {
				seen[c.Start] = true
				fw.Root = RootJournal
				fw.Commits = append(fw.Commits, c)
			}
		}
	}
	for _, k := range fw.KernelWaits {
		if isFreezeWait(k.Stack) {
			fw.Frozen = true
		}
	}
	slices.SortFunc(fw.KernelWaits, func(a, b event.KernelWait) int { return cmp.Compare(b.LatencyMs, a.LatencyMs) })
	slices.SortFunc(fw.RunDelays, func(a, b event.RunDelay) int { return cmp.Compare(b.LatencyMs, a.LatencyMs) })
	slices.SortFunc(fw.Pauses, func(a, b event.JVMPause) int { return cmp.Compare(b.LatencyMs, a.LatencyMs) })
	fw.KernelWaits = fw.KernelWaits[:min(len(fw.KernelWaits), maxFollowerEvidence)]
	fw.RunDelays = fw.RunDelays[:min(len(fw.RunDelays), maxFollowerEvidence)]
	fw.Pauses = fw.Pauses[:min(len(fw.Pauses), maxFollowerEvidence)]
	fw.Commits = fw.Commits[:min(len(fw.Commits), maxFollowerEvidence)]
}

// fetcherThread is the follower's thread that appended the request's
// partition in the follower's part of the wait (ivs, on the leader's
// clock; off: the follower's clock minus the leader's), the last such
// part first; else the one replica fetcher thread that wrote then; 0
// when neither is found.
func fetcherThread(x *Index, rf *ReplicaFetch, ivs []interval, off int64) int32 {
	for k := len(ivs) - 1; k >= 0; k-- {
		tid := int32(0)
		x.overlapping(partKey{rf.Topic, rf.Partition}, ivs[k].a+off, ivs[k].b+off, func(i int32) {
			if tid == 0 {
				tid = x.writes[i].tid
			}
		})
		if tid != 0 {
			return tid
		}
	}
	found := int32(0)
	for _, tid := range x.handlerTIDs {
		if !strings.HasPrefix(x.writeThread(tid), "ReplicaFetcher") {
			continue
		}
		for _, iv := range ivs {
			if len(x.writesOf(tid, iv.a+off, iv.b+off)) > 0 {
				if found != 0 && found != tid {
					return 0 // two fetcher threads wrote: which one is not known
				}
				found = tid
			}
		}
	}
	return found
}

// followerCause names what most of a follower's wait went to, or
// unexplained when nothing accounts for share of it.
func followerCause(fw *FollowerWait, share float64) string {
	pause := CauseGCPause
	if len(fw.Pauses) > 0 && fw.Pauses[0].Type != event.PauseGC {
		pause = CauseSafepoint
	}
	parts := []struct {
		cause string
		ms    float64
	}{
		{CauseSlowWrite, fw.AppendMs},
		{CauseNetwork, fw.NetworkMs},
		{CauseCPUStarved, fw.CPUWaitMs},
		{pause, fw.PauseMs},
		{FollowerLeader, fw.LeaderMs},
	}
	best := slices.MaxFunc(parts, func(a, b struct {
		cause string
		ms    float64
	}) int {
		return cmp.Compare(a.ms, b.ms)
	})
	if best.ms < share*fw.WaitMs || best.ms <= 0 {
		return CauseUnexplained
	}
	return best.cause
}

// isFreezeWait reports whether a kernel stack waits for a frozen file
// system: a writer held at sb_start_write (percpu_down_read on the
// super block's freeze lock) sleeps until the file system is thawed.
func isFreezeWait(stack []string) bool {
	for _, fr := range stack {
		if strings.HasPrefix(fr, "__sb_start_write") || strings.HasPrefix(fr, "sb_start_write") || strings.HasPrefix(fr, "percpu_rwsem_wait") || strings.HasPrefix(fr, "__percpu_down_read") {
			return true
		}
	}
	return false
}

// setFollower names the follower a replication finding waited for, and
// its cause: the decisive fetch's of the larger of its own wait and the
// part inherited from the request ahead.
func setFollower(f *Finding) {
	if f.Cause != CauseReplication {
		return
	}
	fetches := f.Replication
	if qb := f.QueuedBehind; qb != nil && qb.Cause == CauseReplication && f.Shares[CauseReplication]-qb.ReplicationMs < qb.ReplicationMs {
		fetches = qb.Replication
	}
	d, ok := decisive(fetches)
	if !ok || d.Follower == nil {
		return
	}
	id := d.Follower.Broker
	f.Follower, f.FollowerCause = &id, d.Follower.Cause
}

// followerDetail says where a follower's wait went, e.g. "broker 2's
// appends (orders-3, tid 812) took 410.2 ms of the 415.0 ms wait, at
// percpu_rwsem_wait < __sb_start_write (file system frozen)".
func followerDetail(fw *FollowerWait) string {
	var s string
	switch fw.Cause {
	case CauseSlowWrite:
		s = fmt.Sprintf("broker %d's appends (%s, tid %d) took %.1f ms of the %.1f ms wait", fw.Broker, fw.Partition, fw.FetcherTID, fw.AppendMs, fw.WaitMs)
		if k, ok := longestWait(fw.KernelWaits); ok {
			s += ", at " + frames(k.Stack)
		}
		if fw.Frozen {
			s += " (file system frozen)"
		}
		if fw.Root == RootJournal && len(fw.Commits) > 0 {
			s += "; root: " + commitDetail(&fw.Commits[0])
		}
	case CauseNetwork:
		s = fmt.Sprintf("%.1f ms of the %.1f ms wait its fetches and their responses were between broker %d and the leader", fw.NetworkMs, fw.WaitMs, fw.Broker)
	case CauseCPUStarved:
		s = fmt.Sprintf("broker %d's fetcher thread (tid %d) waited %.1f ms of the %.1f ms wait for a CPU", fw.Broker, fw.FetcherTID, fw.CPUWaitMs, fw.WaitMs)
	case CauseGCPause, CauseSafepoint:
		s = fmt.Sprintf("broker %d's JVM stood still %.1f ms of the %.1f ms wait (%s)", fw.Broker, fw.PauseMs, fw.WaitMs, fw.Pauses[0].Name)
	case FollowerLeader:
		s = fmt.Sprintf("broker %d's fetches waited %.1f ms of the %.1f ms in the leader", fw.Broker, fw.LeaderMs, fw.WaitMs)
	default:
		s = fmt.Sprintf("broker %d: nothing accounts for most of the %.1f ms wait (leader %.1f, network %.1f, follower %.1f of which appends %.1f ms)",
			fw.Broker, fw.WaitMs, fw.LeaderMs, fw.NetworkMs, fw.FollowerMs, fw.AppendMs)
	}
	return s + fmt.Sprintf(" [clocks ±%.3f ms]", fw.ClockErrorMs)
}

// writeThread is the name a thread's writes carry ("" without writes).
func (x *Index) writeThread(tid int32) string {
	if ws := x.tidWrites[tid]; len(ws) > 0 {
		return x.strs[x.writes[ws[0]].thread]
	}
	return ""
}
