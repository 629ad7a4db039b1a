package consumers

import (
	"cmp"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/fetchsplit"
)

// FetchLatency is how long one consumer's fetches took and what for
// (internal/fetchsplit): the total as the wire gives it, and the part of
// it that was not purgatory (waiting for data that was not there, which
// a consumer at the end of its log spends most of its fetch time in).
type FetchLatency struct {
	// Group and Client name the consumer as Consumer does.
	Group   string   `json:"group,omitempty"`
	Clients []string `json:"clients"`
	Fetches int64    `json:"fetches"`
	P50Ms   float64  `json:"p50_ms"`
	P99Ms   float64  `json:"p99_ms"`
	// AbnormalP50Ms and AbnormalP99Ms are the percentiles of the part of
	// each fetch that counts as slow (fetchsplit.Split.AbnormalMs).
	AbnormalP50Ms float64 `json:"abnormal_p50_ms"`
	AbnormalP99Ms float64 `json:"abnormal_p99_ms"`
	AbnormalMaxMs float64 `json:"abnormal_max_ms"`
	// PurgatoryShare is the part of all its fetch time spent in
	// purgatory; OtherMs and SendingMs are its fetches' totals of the
	// other parts.
	PurgatoryShare float64 `json:"purgatory_share"`
	PurgatoryMs    float64 `json:"purgatory_ms"`
	OtherMs        float64 `json:"other_ms"`
	SendingMs      float64 `json:"sending_ms"`
	// Bases counts its fetches by how their purgatory was told
	// (fetchsplit.Basis): "assumed" ones rest on no evidence of when
	// their data arrived.
	Bases map[fetchsplit.Basis]int64 `json:"purgatory_bases"`
}

// fetchTimes are one consumer client's fetch time histograms (in
// microseconds) and sums.
type fetchTimes struct {
	total, abnormal *hdrhistogram.Histogram
	sum             fetchsplit.Split
	bases           map[fetchsplit.Basis]int64
	last            time.Time
	// lastEnd is when its last fetch was answered; stalls are the times
	// it had no fetch in flight for longer than it waits in purgatory
	// (its poll loop did not ask: busy processing, paused, stopped).
	lastEnd time.Time
	stalls  []silence
}

// fetchStall is how long a consumer client may go without a fetch in
// flight before it counts as stalled: three times the purgatory wait it
// asks for (a consumer at the end of its log sends the next fetch as the
// last is answered), and at least 2 s.
func fetchStall(maxWaitMs int32) time.Duration {
	return max(2*time.Second, 3*time.Duration(maxWaitMs)*time.Millisecond)
}

// maxFetchHistUs bounds the histograms: a fetch longer than an hour is
// counted as an hour.
const maxFetchHistUs = int64(time.Hour / time.Microsecond)

func newFetchTimes() *fetchTimes {
	return &fetchTimes{total: hdrhistogram.New(1, maxFetchHistUs, 2), abnormal: hdrhistogram.New(1, maxFetchHistUs, 2),
		bases: map[fetchsplit.Basis]int64{}}
}

// split splits a consumer fetch and counts it for its client.
func (a *Aggregator) split(r *event.Request) {
	sp, ok := a.splitter.Add(r)
	if !ok || r.APIKey != apiFetch {
		return
	}
	k := clientKey{hostOf(r.Client), r.ClientID}
	ft := a.fetchTimes[k]
	if ft == nil {
		if len(a.fetchTimes) >= a.o.MaxGroups*10 {
			a.untrackedFetchClients++
			return
		}
		ft = newFetchTimes()
		a.fetchTimes[k] = ft
	}
	ft.total.RecordValue(usOf(sp.TotalMs))
	ft.abnormal.RecordValue(usOf(sp.AbnormalMs))
	ft.sum.TotalMs += sp.TotalMs
	ft.sum.PurgatoryMs += sp.PurgatoryMs
	ft.sum.OtherMs += sp.OtherMs
	ft.sum.SendingMs += sp.SendingMs + sp.ReadingMs
	ft.bases[sp.Basis]++
	ft.last = r.Arrival
	if !ft.lastEnd.IsZero() && r.Arrival.Sub(ft.lastEnd) > fetchStall(r.Fetch.MaxWaitMs) && len(ft.stalls) < maxSilences {
		ft.stalls = append(ft.stalls, silence{ft.lastEnd, r.Arrival})
	}
	ft.lastEnd = later(ft.lastEnd, r.End)
}

// fetchStalls are the fetch stalls of m's client (its client id and host,
// as its group requests named them).
func (a *Aggregator) fetchStalls(m *member) []silence {
	if m == nil {
		return nil
	}
	if ft := a.fetchTimes[m.conn]; ft != nil {
		return ft.stalls
	}
	return nil
}

// usOf is a duration in ms as whole microseconds within the histograms'
// range.
func usOf(msv float64) int64 { return min(max(int64(msv*1000), 1), maxFetchHistUs) }

// fetchLatencies merges the clients' fetch times by consumer, as
// consumers does their partitions: the slowest (abnormal p99) first.
func (a *Aggregator) fetchLatencies() []FetchLatency {
	type merged struct {
		row             FetchLatency
		total, abnormal *hdrhistogram.Histogram
	}
	byName := map[string]*merged{}
	for k, ft := range a.fetchTimes {
		group, client := a.consumerOf(k)
		key := "group:" + group
		if group == "" {
			key = "client:" + client
		}
		m := byName[key]
		if m == nil {
			m = &merged{row: FetchLatency{Group: group, Bases: map[fetchsplit.Basis]int64{}},
				total: hdrhistogram.New(1, maxFetchHistUs, 2), abnormal: hdrhistogram.New(1, maxFetchHistUs, 2)}
			byName[key] = m
		}
		m.row.Clients = append(m.row.Clients, client)
		m.total.Merge(ft.total)
		m.abnormal.Merge(ft.abnormal)
		m.row.PurgatoryMs += ft.sum.PurgatoryMs
		m.row.OtherMs += ft.sum.OtherMs
		m.row.SendingMs += ft.sum.SendingMs
		for b, n := range ft.bases {
			m.row.Bases[b] += n
		}
	}
	out := make([]FetchLatency, 0, len(byName))
	for _, m := range byName {
		row := m.row
		slices.Sort(row.Clients)
		row.Fetches = m.total.TotalCount()
		row.P50Ms, row.P99Ms = msOf(m.total, 50), msOf(m.total, 99)
		row.AbnormalP50Ms, row.AbnormalP99Ms = msOf(m.abnormal, 50), msOf(m.abnormal, 99)
		row.AbnormalMaxMs = float64(m.abnormal.Max()) / 1000
		if all := row.PurgatoryMs + row.OtherMs + row.SendingMs; all > 0 {
			row.PurgatoryShare = row.PurgatoryMs / all
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(x, y FetchLatency) int {
		return cmp.Or(cmp.Compare(y.AbnormalP99Ms, x.AbnormalP99Ms), cmp.Compare(x.Group, y.Group), slices.Compare(x.Clients, y.Clients))
	})
	return out
}

// PurgatoryPct is PurgatoryShare in percent, for the report's page.
func (f FetchLatency) PurgatoryPct() float64 { return f.PurgatoryShare * 100 }
