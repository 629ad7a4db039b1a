package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kscope-dev/kscope/internal/cli"
	"github.com/kscope-dev/kscope/internal/consumers"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/grouphold"
)

const (
	coordTopic = "coord"
	coordGroup = "coord-app"
)

// TestExplainGroupCoordinator is issue 36's "on the broker, the
// coordinator's own causes": a classic group (franz-go consumers, eager
// range assignor) rebalances three times while kscope records the
// broker. During the first, when b joins, the file system of the
// broker's log dir is frozen (fsfreeze) for 2 s: the coordinator cannot
// store the new assignment in __consumer_offsets, and every member waits.
// The second (c joins) and the members leaving at the end are the
// control.
//
// The truth is the freeze: kscope consumers must find the first
// rebalance's coordinator time within 150 ms of the time from the
// coordinator's request's own start to the thaw, name it (an alarm), and
// find the other rebalances' under 100 ms, and carry explain's cause (the
// recording's traces); kscope explain --api group
// must put the slow requests on their append to __consumer_offsets
// (slow-write), and find none outside the freeze.
func TestExplainGroupCoordinator(t *testing.T) {
	b, mnt, _, logDir := explainBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	profileCreateTopic(ctx, t, b.Addr(), coordTopic, 4, nil)

	dir := filepath.Join(t.TempDir(), "rec")
	t.Cleanup(func() { keepDirOnFailure(t, dir) })
	port := b.Addr()[strings.LastIndexByte(b.Addr(), ':')+1:]
	rec := startCLI(ctx, t, "record: broker pid", "record", "--pid", strconv.Itoa(b.PID()), "--log-dirs", logDir,
		"--iface", "lo", "--port", port, "--out", dir)

	a := startCoordMember(ctx, t, b.Addr(), "coord-a")
	a.waitAssigned(t, 20*time.Second)
	time.Sleep(time.Second)

	// The fault: b joins while the log dir is frozen.
	frozeAt := time.Now()
	iotRun(t, "fsfreeze", "-f", mnt)
	bm := startCoordMember(ctx, t, b.Addr(), "coord-b")
	time.Sleep(2 * time.Second)
	thawAt := time.Now()
	iotRun(t, "fsfreeze", "-u", mnt)
	thawed := time.Now()
	bm.waitAssigned(t, 20*time.Second)
	t.Logf("froze %s, thawed %s..%s", frozeAt.Format("15:04:05.000"), thawAt.Format("15:04:05.000"), thawed.Format("15:04:05.000"))

	// The control: c joins with nothing frozen; then all leave.
	time.Sleep(2 * time.Second)
	c := startCoordMember(ctx, t, b.Addr(), "coord-c")
	c.waitAssigned(t, 20*time.Second)
	time.Sleep(2 * time.Second)
	for _, m := range []*coordMember{c, bm, a} {
		m.close()
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	if err := rec.stop(t, syscall.SIGINT); err != nil {
		t.Fatalf("kscope record ended with %v on SIGINT: %s", err, rec.errOut())
	}

	frozen := func(from, to time.Time) bool {
		return from.Before(thawed.Add(50*time.Millisecond)) && to.After(frozeAt)
	}
	t.Run("consumers", func(t *testing.T) {
		rep := consumersReport(t, dir)
		slow := 0
		for _, rb := range rep.Rebalances {
			ref := rb.CoordinatorRequest
			t.Logf("rebalance gen %d at %s: %s %s, total %.0f ms, coordinator %.1f ms (%+v)", rb.Generation, rb.Start.Format("15:04:05.000"),
				rb.Trigger, rb.Member, rb.TotalMs, rb.CoordinatorMs, ref)
			if !frozen(rb.Start, rb.End) {
				if rb.CoordinatorMs >= 100 {
					t.Errorf("rebalance gen %d outside the freeze: the coordinator's own time %.1f ms", rb.Generation, rb.CoordinatorMs)
				}
				continue
			}
			if ref == nil || rb.CoordinatorMs < 100 {
				continue // the freeze fell in its protocol holds
			}
			slow++
			// On a recording, the view carries explain's cause.
			if rb.CoordinatorCause != explain.CauseSlowWrite || !strings.Contains(rb.CoordinatorWhy, grouphold.OffsetsTopic) {
				t.Errorf("rebalance gen %d: the coordinator's cause %q (%s), want slow-write on %s", rb.Generation, rb.CoordinatorCause,
					rb.CoordinatorWhy, grouphold.OffsetsTopic)
			}
			ownStart := ref.Arrival
			if ref.Split.HoldMs > 0 {
				ownStart = ref.Split.HoldEnd
			} else {
				ownStart = ownStart.Add(time.Duration((ref.Split.TotalMs - ref.Split.OwnMs) * float64(time.Millisecond)))
			}
			truth := float64(thawed.Sub(ownStart)) / 1e6
			if d := rb.CoordinatorMs - truth; d < -150 || d > 150 {
				t.Errorf("rebalance gen %d: coordinator %.1f ms, the freeze held it %.1f ms (its own part from %s to the thaw)", rb.Generation,
					rb.CoordinatorMs, truth, ownStart.Format("15:04:05.000"))
			}
		}
		if slow != 1 {
			t.Errorf("%d rebalances with the coordinator slow during the freeze, want 1", slow)
		}
		named := 0
		for _, f := range rep.Findings {
			if f.Rule == "rebalance" && strings.Contains(f.Evidence, "the coordinator itself took") {
				named++
				if !strings.Contains(f.Evidence, "explain: "+explain.CauseSlowWrite) {
					t.Errorf("the rebalance finding does not carry explain's cause: %s", f.Evidence)
				}
				if f.Severity != consumers.Alarm {
					t.Errorf("a rebalance the coordinator held 2 s is a %s: %s", f.Severity, f.Evidence)
				}
			}
		}
		if named != 1 {
			t.Errorf("%d rebalance findings name the coordinator, want 1: %+v", named, rep.Findings)
		}
	})
	t.Run("explain", func(t *testing.T) {
		findings, sum := runExplain(t, dir, "--api", "group")
		t.Logf("%d group requests, %d slow (>= %.0f ms, %s)", sum.GroupRequests, len(findings), sum.ThresholdMs, sum.ThresholdFrom)
		onStore := 0
		for _, f := range findings {
			t.Logf("%s corr %d from %s: %.1f ms (own %.1f): %s: %s", f.API, f.CorrelationID, f.Client, f.LatencyMs, f.GroupSplit.OwnMs, f.Cause, f.Detail)
			if !frozen(f.Arrival, f.End) {
				t.Errorf("%s corr %d from %s at %s, outside the freeze, is slow", f.API, f.CorrelationID, f.Client, f.Arrival.Format("15:04:05.000"))
				continue
			}
			if f.Cause == explain.CauseSlowWrite && strings.Contains(f.Detail, grouphold.OffsetsTopic) {
				onStore++
			}
		}
		if sum.GroupRequests == 0 || onStore == 0 {
			t.Errorf("no slow group request put on its append to __consumer_offsets (%d group requests)", sum.GroupRequests)
		}
	})
}

// consumersReport is kscope consumers' JSON report of a recording.
func consumersReport(t *testing.T, dir string) *consumers.Report {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := cli.Main([]string{"consumers", dir, "--format", "json"}, &out, &errOut); code != 0 {
		t.Fatalf("consumers: exit %d: %s", code, errOut.String())
	}
	rep := new(consumers.Report)
	if err := json.Unmarshal(out.Bytes(), rep); err != nil {
		t.Fatalf("consumers JSON: %v", err)
	}
	return rep
}

// coordMember is a franz-go consumer of coordGroup: eager range
// assignment (one rebalance per change), heartbeats every 500 ms, no
// commits (a commit would wait on the frozen file system and hold the
// member's rejoin, not the coordinator).
type coordMember struct {
	cl       *kgo.Client
	assigned chan struct{}
	done     chan struct{}
	cancel   context.CancelFunc
}

func startCoordMember(ctx context.Context, t *testing.T, addr, clientID string) *coordMember {
	t.Helper()
	m := &coordMember{assigned: make(chan struct{}, 16), done: make(chan struct{})}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID), kgo.ConsumerGroup(coordGroup), kgo.ConsumeTopics(coordTopic),
		kgo.Balancers(kgo.RangeBalancer()), kgo.HeartbeatInterval(500*time.Millisecond), kgo.SessionTimeout(10*time.Second),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case m.assigned <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	pctx, cancel := context.WithCancel(ctx)
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for pctx.Err() == nil {
			cl.PollFetches(pctx)
		}
	}()
	t.Cleanup(m.close)
	return m
}

// waitAssigned waits for the member's next assignment.
func (m *coordMember) waitAssigned(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-m.assigned:
	case <-time.After(within):
		t.Fatalf("no assignment in %s", within)
	}
}

// close leaves the group (LeaveGroup) and stops polling; again is a no-op.
func (m *coordMember) close() {
	if m.cancel == nil {
		return
	}
	m.cancel()
	<-m.done
	m.cl.Close()
	m.cancel = nil
}
