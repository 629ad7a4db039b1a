package metrics

import (
	"cmp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kscope-dev/kscope/internal/consumers"
)

// ConsumersCollector exports the agent's consumers view (consumers.Live)
// as gauges: each consumer's lag in seconds and in messages per topic,
// for the top N (consumer, topic) pairs by lag in seconds and one "other"
// (the largest lag of the rest, their messages summed), so that an alert
// can be written on lag in seconds with a bounded number of series; and
// each group's rebalances within the view's window; and each consumer's
// fetch latency split (internal/fetchsplit): the p99 of the part of its
// fetches that counts as slow, and the share spent in purgatory, for the
// top N consumers by that p99 and one "other".
type ConsumersCollector struct {
	live *consumers.Live
	top  int
	now  func() time.Time

	lagSeconds, lagMessages, rebalances, rebalanceSeconds *prometheus.Desc
	fetchAbnormalP99, fetchPurgatoryRatio                 *prometheus.Desc
}

// DefaultTopConsumerSeries is the (consumer, topic) pairs named by
// default.
const DefaultTopConsumerSeries = 50

// NewConsumersCollector returns a collector of live naming top pairs (0:
// DefaultTopConsumerSeries).
func NewConsumersCollector(live *consumers.Live, top int) *ConsumersCollector {
	if top <= 0 {
		top = DefaultTopConsumerSeries
	}
	labels := []string{"group", "client", "topic"}
	return &ConsumersCollector{live: live, top: top, now: time.Now,
		lagSeconds: prometheus.NewDesc("kscope_consumer_lag_seconds",
			"How old the data at the consumer's fetch position was when it last fetched some (0 once caught up), the largest of the topic's partitions; from the batch timestamps on the wire. group is empty for a consumer without one, which client names.", labels, nil),
		lagMessages: prometheus.NewDesc("kscope_consumer_lag_messages",
			"The high watermark minus the consumer's fetch position, summed over the topic's partitions.", labels, nil),
		rebalances: prometheus.NewDesc("kscope_consumer_group_rebalances",
			"Rebalances of the group that started within the agent's consumers window.", []string{"group"}, nil),
		rebalanceSeconds: prometheus.NewDesc("kscope_consumer_group_rebalance_seconds",
			"The longest rebalance of the group within the agent's consumers window.", []string{"group"}, nil),
		fetchAbnormalP99: prometheus.NewDesc("kscope_consumer_fetch_abnormal_p99_seconds",
			"The p99 of the part of the consumer's fetches that counts as slow: the time beyond the purgatory wait it asked for (max_wait_ms until min_bytes) and beyond sending at 50 MB/s. group is empty for a consumer without one, which client names.",
			[]string{"group", "client"}, nil),
		fetchPurgatoryRatio: prometheus.NewDesc("kscope_consumer_fetch_purgatory_ratio",
			"The share of the consumer's fetch time spent waiting for data that was not there yet (normal for a consumer at the end of its log).",
			[]string{"group", "client"}, nil),
	}
}

// Describe sends the descriptors.
func (c *ConsumersCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lagSeconds, c.lagMessages, c.rebalances, c.rebalanceSeconds, c.fetchAbnormalP99, c.fetchPurgatoryRatio} {
		ch <- d
	}
}

// consumerTopic is one consumer's lag in one topic.
type consumerTopic struct {
	group, client, topic string
	seconds              float64
	messages             int64
}

// Collect sends the current view's gauges.
func (c *ConsumersCollector) Collect(ch chan<- prometheus.Metric) {
	rep := c.live.Report(c.now())
	pairs := topicLags(rep)
	slices.SortFunc(pairs, func(a, b consumerTopic) int {
		return cmp.Or(cmp.Compare(b.seconds, a.seconds), cmp.Compare(b.messages, a.messages), cmp.Compare(a.group, b.group),
			cmp.Compare(a.client, b.client), cmp.Compare(a.topic, b.topic))
	})
	pairs = topAndOther(pairs, c.top, consumerTopic{group: Other, client: Other, topic: Other}, func(o *consumerTopic, p consumerTopic) {
		o.seconds = max(o.seconds, p.seconds)
		o.messages += p.messages
	})
	for _, p := range pairs {
		labels := []string{cleanLabel(p.group), cleanLabel(p.client), cleanLabel(p.topic)}
		ch <- prometheus.MustNewConstMetric(c.lagSeconds, prometheus.GaugeValue, p.seconds, labels...)
		ch <- prometheus.MustNewConstMetric(c.lagMessages, prometheus.GaugeValue, float64(p.messages), labels...)
	}
	c.collectRebalances(ch, rep)
	c.collectFetchLatency(ch, rep)
}

// collectFetchLatency sends each consumer's fetch split, the top
// consumers by the p99 of their fetches' abnormal part named and the
// rest as "other" (the largest p99 of them, their purgatory share
// weighed by their purgatory time).
func (c *ConsumersCollector) collectFetchLatency(ch chan<- prometheus.Metric, rep *consumers.Report) {
	type consumerFetch struct {
		group, client        string
		p99, purgatory, time float64
	}
	var rows []consumerFetch
	for _, f := range rep.FetchLatency { // the slowest first
		client := ""
		if f.Group == "" && len(f.Clients) > 0 {
			client = f.Clients[0]
		}
		rows = append(rows, consumerFetch{f.Group, client, f.AbnormalP99Ms / 1000, f.PurgatoryMs, f.PurgatoryMs + f.OtherMs + f.SendingMs})
	}
	rows = topAndOther(rows, c.top, consumerFetch{group: Other, client: Other}, func(o *consumerFetch, r consumerFetch) {
		o.p99 = max(o.p99, r.p99)
		o.purgatory += r.purgatory
		o.time += r.time
	})
	for _, r := range rows {
		ratio := 0.0
		if r.time > 0 {
			ratio = r.purgatory / r.time
		}
		labels := []string{cleanLabel(r.group), cleanLabel(r.client)}
		ch <- prometheus.MustNewConstMetric(c.fetchAbnormalP99, prometheus.GaugeValue, r.p99, labels...)
		ch <- prometheus.MustNewConstMetric(c.fetchPurgatoryRatio, prometheus.GaugeValue, ratio, labels...)
	}
}

// topicLags folds each consumer's partitions by topic.
func topicLags(rep *consumers.Report) []consumerTopic {
	var out []consumerTopic
	for _, cs := range rep.Consumers {
		client := ""
		if cs.Group == "" && len(cs.Clients) > 0 {
			client = cs.Clients[0]
		}
		byTopic := map[string]*consumerTopic{}
		for _, p := range cs.Partitions {
			t := byTopic[p.Topic]
			if t == nil {
				t = &consumerTopic{group: cs.Group, client: client, topic: p.Topic}
				byTopic[p.Topic] = t
			}
			t.seconds = max(t.seconds, p.LagMs/1000)
			t.messages += p.LagMessages
		}
		for _, t := range byTopic {
			out = append(out, *t)
		}
	}
	return out
}

// collectRebalances sends each group's rebalances, the top groups by
// count named and the rest as "other".
func (c *ConsumersCollector) collectRebalances(ch chan<- prometheus.Metric, rep *consumers.Report) {
	type groupRebalances struct {
		group   string
		n       int
		longest float64
	}
	byGroup := map[string]*groupRebalances{}
	for _, rb := range rep.Rebalances {
		g := byGroup[rb.Group]
		if g == nil {
			g = &groupRebalances{group: rb.Group}
			byGroup[rb.Group] = g
		}
		g.n++
		g.longest = max(g.longest, rb.TotalMs/1000)
	}
	var gs []groupRebalances
	for _, g := range byGroup {
		gs = append(gs, *g)
	}
	slices.SortFunc(gs, func(a, b groupRebalances) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.group, b.group)) })
	gs = topAndOther(gs, c.top, groupRebalances{group: Other}, func(o *groupRebalances, g groupRebalances) {
		o.n += g.n
		o.longest = max(o.longest, g.longest)
	})
	for _, g := range gs {
		ch <- prometheus.MustNewConstMetric(c.rebalances, prometheus.GaugeValue, float64(g.n), cleanLabel(g.group))
		ch <- prometheus.MustNewConstMetric(c.rebalanceSeconds, prometheus.GaugeValue, g.longest, cleanLabel(g.group))
	}
}

// topAndOther keeps the first top of rows, ranked already, and folds the
// rest into other with merge, as one last row: the gauges' series stay
// bounded whatever the cluster holds.
func topAndOther[T any](rows []T, top int, other T, merge func(*T, T)) []T {
	if len(rows) <= top {
		return rows
	}
	for _, r := range rows[top:] {
		merge(&other, r)
	}
	return append(rows[:top], other)
}
