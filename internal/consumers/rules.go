package consumers

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/grouphold"

	"github.com/kscope-dev/kscope/internal/output"
)

// Finding is one thing wrong with a consumer or a group, with the rule
// that fired and the evidence.
type Finding struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"` // alarm, warning or note
	Title    string `json:"title"`
	Evidence string `json:"evidence"`
	// Weight orders findings of one severity: seconds behind, or of
	// rebalancing.
	Weight float64 `json:"weight"`
}

// Severities, as findings.Severity names them.
const (
	Alarm   = "alarm"
	Warning = "warning"
	Note    = "note"
)

// Rule is one check, its threshold and where that comes from.
type Rule struct {
	Name      string
	Threshold string
	Source    string
	fire      func(r *Report, o Options) []Finding
}

// Rules is the table the report is checked against.
func Rules() []Rule {
	return []Rule{
		{Name: "lag", Threshold: "a consumer whose data at its position is 1 minute old or more (warning), 10 minutes or more (alarm); --lag-warning, --lag-alarm",
			Source: "lag in time is what a consumer's service level is written on (streamshub/console #2743, kafbat/kafka-ui #1377); measured from the batch timestamps at its fetch position",
			fire:   lagFindings},
		{Name: "rebalance", Threshold: "every rebalance (warning); one of 30 s or more, 3 or more of a group in the capture, or one in which the coordinator's own time was 1 s or more (alarm); its own time is named from 100 ms",
			Source: "consumers of a group stop reading while it rebalances; long and repeated rebalances are a classic outage (redpanda #7392)",
			fire:   rebalanceFindings},
		{Name: "never-commits", Threshold: "a consumer that fetched and committed no offset in the capture",
			Source: "tools that read lag from committed offsets (Burrow, kafka-lag-exporter, kafka_exporter) do not see it (kafka-lag-exporter #126, kafka_exporter #237)",
			fire:   neverCommits},
		{Name: "slow-fetch", Threshold: "a consumer whose fetches' p99, without the time they waited for data that was not there, is 200 ms or more (warning), 1 s or more (alarm)",
			Source: "a fetch's latency includes the purgatory wait its client asked for (max_wait_ms), which KIP-736 calls greatly skewing it; only the rest is the broker's or the network's",
			fire:   slowFetches},
	}
}

// Evaluate checks the report against every rule and ranks the findings:
// the most severe first, then by weight.
func Evaluate(r *Report, o Options) []Finding {
	if o.LagWarning == 0 {
		o.LagWarning, o.LagAlarm = DefaultLagWarning, DefaultLagAlarm
	}
	if o.SlowFetchWarning == 0 {
		o.SlowFetchWarning, o.SlowFetchAlarm = DefaultSlowFetchWarning, DefaultSlowFetchAlarm
	}
	var out []Finding
	for _, rule := range Rules() {
		for _, f := range rule.fire(r, o) {
			f.Rule = rule.Name
			out = append(out, f)
		}
	}
	rank := map[string]int{Alarm: 0, Warning: 1, Note: 2}
	slices.SortStableFunc(out, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(rank[a.Severity], rank[b.Severity]), cmp.Compare(b.Weight, a.Weight))
	})
	return out
}

func lagFindings(r *Report, o Options) []Finding {
	var out []Finding
	for i := range r.Consumers {
		c := &r.Consumers[i]
		sev := ""
		switch {
		case c.MaxLagMs >= float64(o.LagAlarm.Milliseconds()):
			sev = Alarm
		case c.MaxLagMs >= float64(o.LagWarning.Milliseconds()):
			sev = Warning
		default:
			continue
		}
		worst := slices.MaxFunc(c.Partitions, func(a, b Partition) int { return cmp.Compare(a.LagMs, b.LagMs) })
		out = append(out, Finding{Severity: sev, Weight: c.MaxLagMs / 1000,
			Title: fmt.Sprintf("%s is %s behind (%d messages)", c.Name(), dur(c.MaxLagMs), c.LagMessages),
			Evidence: fmt.Sprintf("most behind: %s-%d at offset %d of %d, its data %s old, behind for %s; read by %s",
				output.Escape(worst.Topic), worst.Partition, worst.Position, worst.HighWatermark, dur(worst.LagMs), dur(worst.BehindSec*1000),
				output.Escape(worst.Client))})
	}
	return out
}

func rebalanceFindings(r *Report, _ Options) []Finding {
	perGroup := map[string]int{}
	for _, rb := range r.Rebalances {
		perGroup[rb.Group]++
	}
	var out []Finding
	for _, rb := range r.Rebalances {
		sev := Warning
		if rb.TotalMs >= 30_000 || perGroup[rb.Group] >= 3 || rb.CoordinatorMs >= coordinatorAlarmMs {
			sev = Alarm
		}
		who := "a member"
		if rb.Member != "" {
			who = "member " + quote(rb.Member)
			if rb.Client != "" {
				who += " (" + output.Escape(rb.Client) + ")"
			}
		}
		title := fmt.Sprintf("group %s rebalanced for %s at %s: %s %s", quote(rb.Group), dur(rb.TotalMs), rb.Start.UTC().Format("15:04:05.000"),
			who, rb.Trigger)
		if rb.Trigger == "unknown" {
			title = fmt.Sprintf("group %s rebalanced for %s at %s", quote(rb.Group), dur(rb.TotalMs), rb.Start.UTC().Format("15:04:05.000"))
		}
		ev := fmt.Sprintf("%s; %s protocol, generation %d, %d members; join %s, sync %s; the slowest, %s, came %s after the start",
			rb.Detail, rb.Protocol, rb.Generation, rb.Members, dur(rb.JoinMs), dur(rb.SyncMs), quote(rb.Slowest), dur(rb.SlowestMs))
		if rb.SlowestWhy != "" {
			ev += "; " + rb.SlowestWhy
		}
		if c := rb.CoordinatorRequest; c != nil && rb.CoordinatorMs >= coordinatorNoteMs {
			ev += "; " + coordinatorEvidence(c, rb.CoordinatorCause, rb.CoordinatorWhy)
		}
		switch {
		case rb.Superseded:
			ev += "; superseded by the next epoch before every member reached it"
		case !rb.Complete:
			ev += "; not complete when the capture ended"
		}
		if perGroup[rb.Group] >= 3 {
			ev += fmt.Sprintf("; %d rebalances of the group in the capture", perGroup[rb.Group])
		}
		out = append(out, Finding{Severity: sev, Weight: rb.TotalMs / 1000, Title: title, Evidence: ev})
	}
	return out
}

// neverCommits names each consumer that fetched and never committed: its
// lag is the wire's to tell.
func neverCommits(r *Report, _ Options) []Finding {
	var out []Finding
	for i := range r.Consumers {
		c := &r.Consumers[i]
		if !c.NeverCommits {
			continue
		}
		var fetches int64
		for _, p := range c.Partitions {
			fetches += p.Fetches
		}
		out = append(out, Finding{Severity: Note, Weight: float64(c.LagMessages),
			Title: fmt.Sprintf("%s reads and never commits: commit-based lag tools do not see it", c.Name()),
			Evidence: fmt.Sprintf("%d fetches of %d partitions, no OffsetCommit in %s; its lag from the wire: %d messages, %s",
				fetches, len(c.Partitions), dur(r.Seconds*1000), c.LagMessages, dur(c.MaxLagMs))})
	}
	return out
}

// slowFetches names each consumer whose fetches are slow beyond their
// purgatory.
func slowFetches(r *Report, o Options) []Finding {
	var out []Finding
	for _, fl := range r.FetchLatency {
		sev := ""
		switch {
		case fl.AbnormalP99Ms >= float64(o.SlowFetchAlarm.Milliseconds()):
			sev = Alarm
		case fl.AbnormalP99Ms >= float64(o.SlowFetchWarning.Milliseconds()):
			sev = Warning
		default:
			continue
		}
		c := Consumer{Group: fl.Group, Clients: fl.Clients}
		out = append(out, Finding{Severity: sev, Weight: fl.AbnormalP99Ms / 1000,
			Title: fmt.Sprintf("%s's fetches are slow: p99 %s beyond waiting for data", c.Name(), dur(fl.AbnormalP99Ms)),
			Evidence: fmt.Sprintf("%d fetches, p99 %s in all, %.0f%% of their time waiting for data (purgatory); the rest: %s in the broker before the response, %s sending; kscope explain --api fetch names the causes",
				fl.Fetches, dur(fl.P99Ms), fl.PurgatoryShare*100, dur(fl.OtherMs), dur(fl.SendingMs))})
	}
	return out
}

func dur(ms float64) string {
	switch {
	case ms >= 120_000:
		return strconv.FormatFloat(ms/60_000, 'f', 1, 64) + " min"
	case ms >= 10_000:
		return strconv.FormatFloat(ms/1000, 'f', 0, 64) + " s"
	case ms >= 1000:
		return strconv.FormatFloat(ms/1000, 'f', 1, 64) + " s"
	}
	return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
}

// quote is a client-chosen name, escaped for a terminal and quoted.
func quote(s string) string { return "`" + output.Escape(s) + "`" }

// A rebalance's coordinator's own time is named from coordinatorNoteMs
// (its own work is a few milliseconds: answering, one append to
// __consumer_offsets) and makes the rebalance an alarm from
// coordinatorAlarmMs.
const (
	coordinatorNoteMs  = float64(grouphold.SlowOwn / time.Millisecond)
	coordinatorAlarmMs = 1000
)

// coordinatorEvidence says where the coordinator's own time went, and
// why when explain said (cause, why).
func coordinatorEvidence(c *grouphold.Ref, cause, why string) string {
	s := fmt.Sprintf("the coordinator itself took %s answering %s corr %d from %s", dur(c.Split.OwnMs), kmsg.NameForKey(c.API), c.CorrelationID, output.Escape(c.Client))
	if c.Member != "" {
		s += " (member " + quote(c.Member) + ")"
	}
	if c.Split.HoldMs > 0 {
		s += fmt.Sprintf(", after the protocol held it %s (%s)", dur(c.Split.HoldMs), c.Split.Hold)
	}
	if c.API == apiSyncGroup {
		s += ": storing the assignment in __consumer_offsets"
	}
	if cause != "" {
		return s + "; explain: " + cause + ": " + output.Escape(why)
	}
	return s + "; kscope explain --api group on a recording names why"
}
