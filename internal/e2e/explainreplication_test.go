package e2e

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// followerStop is how long the follower is stopped per injection.
const followerStop = time.Second

// TestExplainReplication is issue 16's replication scenario: a two-node
// KRaft cluster, a topic of 4 partitions each led by node 1 with node 2
// its only follower, acks=all load (recordScenario's producers) and
// `kscope record` on the leader. The follower's JVM is stopped (SIGSTOP)
// for a second three times: the leader appends at once, but no request
// can be answered until the follower, resumed, fetches past it. explain
// must put at least 90% of the slow requests in those windows on
// replication, naming node 2 by the fetch that ended the wait; a control
// run must show no follower anywhere near that late.
func TestExplainReplication(t *testing.T) {
	iotRequire(t)
	libs := labtest.RequireKafka(t)
	leader, follower := replicationCluster(t, libs)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic = "explain-replication"
	createLedTopic(ctx, t, leader, topic, 4, int32(leader.NodeID()), int32(follower.NodeID()))
	logDir := leader.LogDirs()[0]
	slowID := int32(follower.NodeID())

	record := func(t *testing.T, inject func(context.Context) []freezeWindow) (string, []freezeWindow) {
		dir, windows, meta := recordKept(ctx, t, leader, logDir, topic, inject)
		t.Logf("capture: %+v", meta.Capture)
		return dir, windows
	}

	// The control stops nothing. On two CPUs shared by two brokers, the
	// producers and the recorder, a follower can fetch tens of
	// milliseconds late, and a slow request may then rightly be put on
	// replication: that is a measured wait, not a guess, so the control
	// cannot ask for no replication at all. What only the injection
	// makes is a follower absent for a good part of a second: no
	// finding may rest on a follower fetch half the stop late or later,
	// or after a silence that long, nor measure that much replication.
	t.Run("control", func(t *testing.T) {
		dir, _ := record(t, func(context.Context) []freezeWindow { time.Sleep(4 * time.Second); return nil })
		findings, sum := runExplain(t, dir)
		t.Logf("control: %d produce requests, p99 %.1f ms, causes %s; %d follower fetches; replication measured by %v",
			sum.ProduceRequests, sum.ThresholdMs, causeCounts(sum), sum.FollowerFetches, sum.ReplicationBy)
		if sum.FollowerFetches == 0 {
			t.Error("control run: no follower fetch in the capture (is node 2 replicating from the leader?)")
		}
		limit := float64(followerStop.Milliseconds()) / 2
		for _, f := range findings {
			t.Logf("control: %s/%d %.1f ms: %s: %s", f.Client, f.CorrelationID, f.LatencyMs, f.Cause, f.Detail)
			if f.Cause != explain.CauseReplication {
				continue
			}
			if f.Shares[explain.CauseReplication] >= limit {
				t.Errorf("control run: %s/%d waited %.1f ms for followers: %s", f.Client, f.CorrelationID, f.Shares[explain.CauseReplication], f.Detail)
			}
			for _, rf := range replicaFetches(f) {
				if rf.LateMs >= limit || rf.SilentMs >= limit {
					t.Errorf("control run: %s/%d rests on follower %d fetching %.1f ms late, silent %.1f ms: %s", f.Client, f.CorrelationID, rf.Replica, rf.LateMs, rf.SilentMs, f.Detail)
				}
			}
		}
	})

	t.Run("slow-follower", func(t *testing.T) {
		dir, windows := record(t, func(ctx context.Context) []freezeWindow {
			var ws []freezeWindow
			for range 3 {
				time.Sleep(800 * time.Millisecond)
				ws = append(ws, stopFollower(t, follower.PID(), followerStop))
			}
			time.Sleep(800 * time.Millisecond)
			return ws
		})
		// The follower cannot fetch while stopped: the fetch that ended
		// the wait of a request it held is one of its first after a
		// resume, and the follower was silent for most of the stop.
		resumed := func(at time.Time) bool {
			for _, w := range windows {
				if !at.Before(w.thawAt) && at.Before(w.thawed.Add(500*time.Millisecond)) {
					return true
				}
			}
			return false
		}
		checkCause(t, dir, windows, explain.CauseReplication, func(f *explain.Finding) bool {
			for _, rf := range replicaFetches(f) {
				if rf.Decisive && rf.Replica == slowID && resumed(rf.FetchArrival) && rf.SilentMs >= float64(followerStop.Milliseconds())/2 {
					return true
				}
			}
			return false
		})
		_, sum := runExplain(t, dir, "--summary")
		t.Logf("replication measured by %v", sum.ReplicationBy)
		if sum.ReplicationBy[explain.ReplicationByFetch] == 0 {
			t.Errorf("no slow request's replication measured by the followers' fetches: %v", sum.ReplicationBy)
		}
	})
}

// replicaFetches are the follower fetches a finding rests on: its own,
// and those of the request it was queued behind.
func replicaFetches(f *explain.Finding) []explain.ReplicaFetch {
	out := f.Replication
	if qb := f.QueuedBehind; qb != nil {
		out = append(out[:len(out):len(out)], qb.Replication...)
	}
	return out
}

// replicationCluster starts a two-node cluster for the test (node 1 the
// leader, node 2 the follower) and stops it in t.Cleanup, resuming the
// follower first should the test have left it stopped.
func replicationCluster(t *testing.T, libs string) (leader, follower *lab.Broker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := lab.StartCluster(ctx, lab.ClusterConfig{Dir: t.TempDir(), Brokers: 2, LibsDir: libs})
	if err != nil {
		t.Fatalf("start a two-node cluster: %v", err)
	}
	t.Cleanup(func() {
		labtest.StopCluster(t, c)
	})
	nodes := c.Brokers()
	t.Logf("cluster of %d (Kafka %s) started in %v: %s", len(nodes), c.Version(), time.Since(start).Round(time.Millisecond), c.Bootstrap())
	// Runs before the cluster's Stop (cleanups run last first).
	t.Cleanup(func() { _ = syscall.Kill(nodes[1].PID(), syscall.SIGCONT) })
	return nodes[0], nodes[1]
}

// stopFollower stops the JVM pid (ours: the test's follower) for d.
func stopFollower(t *testing.T, pid int, d time.Duration) freezeWindow {
	var w freezeWindow
	w.frozeAt = time.Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Errorf("SIGSTOP the follower (pid %d): %v", pid, err)
	}
	w.frozen = time.Now()
	time.Sleep(d)
	w.thawAt = time.Now()
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Errorf("SIGCONT the follower (pid %d): %v", pid, err)
	}
	w.thawed = time.Now()
	return w
}

// createLedTopic creates topic with partitions partitions, each on
// leaderID (its preferred leader) and followerID, and waits until every
// partition is led by leaderID with both replicas in sync.
func createLedTopic(ctx context.Context, t *testing.T, leader *lab.Broker, topic string, partitions int, leaderID, followerID int32) {
	t.Helper()
	assignment := make([][]int32, partitions)
	for p := range assignment {
		assignment[p] = []int32{leaderID, followerID}
	}
	createAssignedTopic(ctx, t, leader.Addr(), topic, assignment, nil)
}
