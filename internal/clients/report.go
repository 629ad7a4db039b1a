package clients

import (
	"cmp"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Report is the clients view of one stream of requests.
type Report struct {
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
	// Target is the release requests were checked against ("" for none).
	Target   string    `json:"target,omitempty"`
	Requests int64     `json:"requests"`
	Bytes    int64     `json:"bytes"`
	Clients  []Client  `json:"clients"`
	Findings []Finding `json:"findings"`
	// UntrackedRequests were on connections past the bound on those
	// followed: they count for their client, not for its connections.
	UntrackedRequests int64 `json:"untracked_requests,omitempty"`
}

// Client is one client's row.
type Client struct {
	Address   string `json:"address"`
	Principal string `json:"principal,omitempty"`
	ClientID  string `json:"client_id"`
	// Software is what its connections announced ("name/version"), most
	// requests first; SoftwareNote says why it is empty.
	Software     []string `json:"software,omitempty"`
	SoftwareNote string   `json:"software_note,omitempty"`
	// Roles: producer, consumer, follower, group member, admin.
	Roles []string `json:"roles"`

	Connections int `json:"connections"`
	// ActiveSec is the time from its first request to its last; the
	// rates are over it.
	ActiveSec float64 `json:"active_sec"`
	// OldAPIVersions is set when its connections sent ApiVersions older
	// than v3, which announces no software.
	OldAPIVersions bool `json:"old_api_versions,omitempty"`
	// ConnectionsPerMin is connections first seen per minute of the
	// capture; LifetimeSec the median time a connection was seen in.
	ConnectionsPerMin float64 `json:"connections_per_min"`
	LifetimeSec       float64 `json:"lifetime_sec"`

	Requests       int64   `json:"requests"`
	RequestsPerSec float64 `json:"requests_per_sec"`
	RequestShare   float64 `json:"request_share"`
	Bytes          int64   `json:"bytes"`
	ByteShare      float64 `json:"byte_share"`
	Failed         int64   `json:"failed"`
	// Unanswered requests got no response (acks=0 produce requests
	// apart): their connection closed first, or the capture ended.
	Unanswered int64        `json:"unanswered"`
	Errors     []ErrorCount `json:"errors,omitempty"`

	MetadataPerSec          float64 `json:"metadata_per_sec"`
	AllTopicsMetadataPerSec float64 `json:"all_topics_metadata_per_sec"`
	// HandshakesPerMin counts ApiVersions and SASL handshakes: one set
	// per connection a client opens.
	HandshakesPerMin float64 `json:"handshakes_per_min"`

	APIs     []APIUse    `json:"apis"`
	Rejected []Rejection `json:"rejected,omitempty"`
	Producer *Producer   `json:"producer,omitempty"`
	Consumer *Consumer   `json:"consumer,omitempty"`
	Groups   []Group     `json:"groups,omitempty"`
}

// Name is how findings name the client: its client id, address,
// principal and software.
func (c *Client) Name() string {
	s := "client id " + quote(c.ClientID) + " (" + c.Address
	if c.Principal != "" {
		s += ", principal " + quote(c.Principal)
	}
	if len(c.Software) > 0 {
		s += ", " + c.Software[0]
	} else if c.SoftwareNote != "" {
		s += ", " + c.SoftwareNote
	}
	return s + ")"
}

// ErrorCount is how many responses carried one error code.
type ErrorCount struct {
	Code  int16  `json:"code"`
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// APIUse is one API's versions in use.
type APIUse struct {
	API      string       `json:"api"`
	Key      int16        `json:"key"`
	Versions []VersionUse `json:"versions"`
}

// VersionUse counts requests of one version.
type VersionUse struct {
	Version  int16 `json:"version"`
	Requests int64 `json:"requests"`
}

// Rejection is one API version a client uses that the target release
// rejects.
type Rejection struct {
	API      string    `json:"api"`
	Key      int16     `json:"key"`
	Version  int16     `json:"version"`
	Requests int64     `json:"requests"`
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	Why      string    `json:"why"`
}

// Dist is a distribution's summary.
type Dist struct {
	N    int64   `json:"n"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Producer is how a client produces.
type Producer struct {
	Requests         int64            `json:"requests"`
	PerSec           float64          `json:"per_sec"`
	Acks             map[int16]int64  `json:"acks"`
	Codecs           map[string]int64 `json:"codecs"`
	Idempotent       int64            `json:"idempotent"`
	Transactional    int64            `json:"transactional"`
	TransactionalIDs []string         `json:"transactional_ids,omitempty"`
	// MinMagic is the oldest record format it sent.
	MinMagic             int8 `json:"min_magic"`
	BatchesPerRequest    Dist `json:"batches_per_request"`
	PartitionsPerRequest Dist `json:"partitions_per_request"`
	// GapMs is the time between a connection's produce requests;
	// InferredLingerMs its median when batches are not full (linger.ms
	// sends them), 0 when batches fill (batch.size sends them).
	GapMs            Dist           `json:"gap_ms"`
	InferredLingerMs float64        `json:"inferred_linger_ms"`
	Throttled        int64          `json:"throttled"`
	ThrottledShare   float64        `json:"throttled_share"`
	Failed           int64          `json:"failed"`
	Errors           []ErrorCount   `json:"errors,omitempty"`
	Topics           []TopicProduce `json:"topics"`
}

// TopicProduce is one topic's batches from a client.
type TopicProduce struct {
	Topic           string `json:"topic"`
	Batches         int64  `json:"batches"`
	Records         int64  `json:"records"`
	Bytes           int64  `json:"bytes"`
	RecordsPerBatch Dist   `json:"records_per_batch"`
	BytesPerBatch   Dist   `json:"bytes_per_batch"`
}

// Consumer is how a client fetches.
type Consumer struct {
	Fetches       int64           `json:"fetches"`
	PerSec        float64         `json:"per_sec"`
	EmptyShare    float64         `json:"empty_share"`
	MaxWaitMs     map[int32]int64 `json:"max_wait_ms"`
	MinBytes      map[int32]int64 `json:"min_bytes"`
	MaxBytes      map[int32]int64 `json:"max_bytes,omitempty"`
	ResponseBytes Dist            `json:"response_bytes"`
}

// Group is a consumer group a client is a member of.
type Group struct {
	Group string `json:"group"`
	// Protocol is "classic" (JoinGroup, SyncGroup, Heartbeat) or
	// "consumer" (KIP-848's ConsumerGroupHeartbeat); "" when the capture
	// saw only offset requests.
	Protocol string   `json:"protocol,omitempty"`
	Members  []string `json:"members,omitempty"`
}

// Report returns the view of everything added so far.
func (a *Aggregator) Report() *Report {
	a.flush()
	rep := &Report{Start: a.first, End: a.last, Target: a.o.TargetName, Requests: a.total.requests, Bytes: a.total.bytes,
		UntrackedRequests: a.untracked}
	if a.last.After(a.first) {
		rep.Seconds = a.last.Sub(a.first).Seconds()
	}
	lifetimes := a.lifetimes()
	for _, c := range a.clients {
		rep.Clients = append(rep.Clients, a.row(c, rep, lifetimes[c]))
	}
	if a.other != nil {
		rep.Clients = append(rep.Clients, a.row(a.other, rep, lifetimes[a.other]))
	}
	slices.SortFunc(rep.Clients, func(x, y Client) int {
		return cmp.Or(cmp.Compare(y.Requests, x.Requests), cmp.Compare(x.ClientID, y.ClientID), cmp.Compare(x.Address, y.Address),
			cmp.Compare(x.Principal, y.Principal))
	})
	rep.Findings = Evaluate(rep)
	return rep
}

// lifetimes are each client's connections' lifetimes in seconds, and
// whether each connection announced software.
func (a *Aggregator) lifetimes() map[*client]*connFacts {
	out := map[*client]*connFacts{}
	for _, cn := range a.conns.All() {
		if cn.c == nil {
			continue
		}
		f := out[cn.c]
		if f == nil {
			f = &connFacts{life: newHist()}
			out[cn.c] = f
		}
		_ = f.life.RecordValue(max(1, cn.last.Sub(cn.first).Milliseconds()))
		switch {
		case cn.apiVersions < 0:
			f.noAPIVersions++
		case cn.apiVersions < 3:
			f.oldAPIVersions = max(f.oldAPIVersions, cn.apiVersions+1)
		}
	}
	return out
}

type connFacts struct {
	life           *hdrhistogram.Histogram
	noAPIVersions  int
	oldAPIVersions int16 // highest old ApiVersions version + 1; 0: none
}

func (a *Aggregator) row(c *client, rep *Report, facts *connFacts) Client {
	// Rates are over the time the client was active (at least a second):
	// a client busy for 15 s of a 10-minute capture did 200 requests a
	// second, not 5.
	secs := max(c.last.Sub(c.first).Seconds(), 1)
	row := Client{Address: c.key.host, Principal: c.key.principal, ClientID: c.key.clientID, Connections: c.conns,
		Requests: c.requests, Bytes: c.bytes, Failed: c.failed, Unanswered: c.unanswered, Errors: errorCounts(c.errors),
		RequestsPerSec: float64(c.requests) / secs, ActiveSec: c.last.Sub(c.first).Seconds(),
		MetadataPerSec: float64(c.metadata) / secs, AllTopicsMetadataPerSec: float64(c.allTopics) / secs,
		HandshakesPerMin:  float64(c.handshakes+c.countAPI(apiVersionsKey)) / secs * 60,
		ConnectionsPerMin: float64(c.conns) / secs * 60,
	}
	row.RequestShare = share(c.requests, rep.Requests)
	row.ByteShare = share(c.bytes, rep.Bytes)
	row.Software = softwareByUse(c.software)
	if facts != nil {
		row.LifetimeSec = float64(facts.life.ValueAtQuantile(50)) / 1000
		row.OldAPIVersions = facts.oldAPIVersions > 0
		if len(row.Software) == 0 {
			row.SoftwareNote = softwareNote(facts)
		}
	}
	row.APIs, row.Rejected = a.apis(c)
	if c.producer != nil {
		row.Producer = c.producer.summary(secs)
	}
	if c.consumer != nil {
		row.Consumer = c.consumer.summary(secs)
	}
	row.Groups = groups(c.groups)
	row.Roles = roles(c, &row)
	return row
}

// softwareNote says why a client announced no software.
func softwareNote(f *connFacts) string {
	switch {
	case f.oldAPIVersions > 0:
		return "unknown software (ApiVersions v" + itoa(int64(f.oldAPIVersions-1)) + ": older than KIP-511's v3)"
	case f.noAPIVersions > 0:
		return "unknown software (no ApiVersions seen: connections older than the capture, or a client that never asks)"
	}
	return ""
}

func (c *client) countAPI(key int16) int64 {
	var n int64
	for av, u := range c.apis {
		if av.key == key {
			n += u.requests
		}
	}
	return n
}

// apis lists the client's API versions, and those the target rejects.
func (a *Aggregator) apis(c *client) ([]APIUse, []Rejection) {
	byKey := map[int16]*APIUse{}
	var rejected []Rejection
	for av, u := range c.apis {
		au := byKey[av.key]
		if au == nil {
			au = &APIUse{API: APIName(av.key), Key: av.key}
			byKey[av.key] = au
		}
		au.Versions = append(au.Versions, VersionUse{Version: av.version, Requests: u.requests})
		if a.o.Target == nil || av.key < 0 {
			continue
		}
		if no, why := rejects(a.o.Target, a.o.TargetName, av.key, av.version); no {
			rejected = append(rejected, Rejection{API: APIName(av.key), Key: av.key, Version: av.version, Requests: u.requests,
				First: u.first, Last: u.last, Why: why})
		}
	}
	out := make([]APIUse, 0, len(byKey))
	for _, au := range byKey {
		slices.SortFunc(au.Versions, func(x, y VersionUse) int { return cmp.Compare(x.Version, y.Version) })
		out = append(out, *au)
	}
	slices.SortFunc(out, func(x, y APIUse) int { return cmp.Compare(x.Key, y.Key) })
	slices.SortFunc(rejected, func(x, y Rejection) int { return cmp.Or(cmp.Compare(x.Key, y.Key), cmp.Compare(x.Version, y.Version)) })
	return out, rejected
}

// APIName is an API key's name (kmsg's), "other" for the row of
// versions past the bound, "unknown(N)" for a key kmsg does not know.
func APIName(key int16) string {
	if key < 0 {
		return "other"
	}
	if n := kmsg.NameForKey(key); n != "" {
		return n
	}
	return "unknown(" + itoa(int64(key)) + ")"
}

func (p *producer) summary(secs float64) *Producer {
	// The maps are copies: Live's report of the window in progress is
	// read (encoded at the agent's /clients) while requests are added.
	out := &Producer{Requests: p.requests, PerSec: float64(p.requests) / secs, Acks: p.acks.counts(), Codecs: p.codecs.counts(),
		Idempotent: p.idempotent, Transactional: p.transactional, MinMagic: p.minMagic,
		BatchesPerRequest: dist(p.batchesPerRequest.histogram(), 1), PartitionsPerRequest: dist(p.partitionsPerRequest.histogram(), 1),
		GapMs: dist(p.gapUs.histogram(), 1000), Throttled: p.throttled, ThrottledShare: share(p.throttled, p.requests),
		Failed: p.failed, Errors: errorCounts(p.errors)}
	for id := range p.transactionalIDs {
		out.TransactionalIDs = append(out.TransactionalIDs, id)
	}
	slices.Sort(out.TransactionalIDs)
	full := false
	for name, t := range p.topics {
		tp := TopicProduce{Topic: name, Batches: t.batches, Records: t.records, Bytes: t.bytes,
			RecordsPerBatch: dist(t.recordsPerBatch.histogram(), 1), BytesPerBatch: dist(t.bytesPerBatch.histogram(), 1)}
		// Batches that fill to the largest seen are sent by batch.size,
		// not by linger.ms.
		full = full || (tp.BytesPerBatch.N > 0 && tp.BytesPerBatch.P50 >= 0.9*tp.BytesPerBatch.Max && tp.BytesPerBatch.Max >= 8192)
		out.Topics = append(out.Topics, tp)
	}
	slices.SortFunc(out.Topics, func(x, y TopicProduce) int {
		return cmp.Or(cmp.Compare(y.Batches, x.Batches), cmp.Compare(x.Topic, y.Topic))
	})
	if !full {
		out.InferredLingerMs = out.GapMs.P50
	}
	return out
}

func (c *consumer) summary(secs float64) *Consumer {
	return &Consumer{Fetches: c.fetches, PerSec: float64(c.fetches) / secs, EmptyShare: share(c.empty, c.answered),
		MaxWaitMs: c.maxWait.counts(), MinBytes: c.minBytes.counts(), MaxBytes: c.maxBytes.counts(), ResponseBytes: dist(c.responseBytes.histogram(), 1)}
}

func groups(m map[string]*groupUse) []Group {
	var out []Group
	for id, g := range m {
		grp := Group{Group: id}
		switch {
		case g.classic && g.consumer:
			grp.Protocol = "classic+consumer"
		case g.classic:
			grp.Protocol = "classic"
		case g.consumer:
			grp.Protocol = "consumer"
		}
		for m := range g.members {
			grp.Members = append(grp.Members, m)
		}
		slices.Sort(grp.Members)
		out = append(out, grp)
	}
	slices.SortFunc(out, func(x, y Group) int { return cmp.Compare(x.Group, y.Group) })
	return out
}

func roles(c *client, row *Client) []string {
	var out []string
	if row.Producer != nil {
		out = append(out, "producer")
	}
	if row.Consumer != nil {
		out = append(out, "consumer")
	}
	if c.follower {
		out = append(out, "follower")
	}
	if len(row.Groups) > 0 {
		out = append(out, "group member")
	}
	if len(out) == 0 {
		out = append(out, "admin")
	}
	return out
}

// softwareByUse names the client's software ("name/version"), the most
// used first, at most 8.
func softwareByUse(bySoftware map[softwareKey]*int64) []string {
	m := make(map[string]int64, len(bySoftware))
	for k, n := range bySoftware {
		m[k.name+"/"+k.version] += *n
	}
	out := make([]string, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	slices.SortFunc(out, func(x, y string) int { return cmp.Or(cmp.Compare(m[y], m[x]), cmp.Compare(x, y)) })
	if len(out) > 8 {
		out = out[:8]
	}
	return out
}

func errorCounts(m map[int16]int64) []ErrorCount {
	var out []ErrorCount
	for code, n := range m {
		out = append(out, ErrorCount{Code: code, Name: errorName(code), Count: n})
	}
	slices.SortFunc(out, func(x, y ErrorCount) int { return cmp.Or(cmp.Compare(y.Count, x.Count), cmp.Compare(x.Code, y.Code)) })
	return out
}

// errorName is the error code's name as franz-go's kerr has it.
func errorName(code int16) string {
	if err, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && (err != kerr.UnknownServerError || code == -1) {
		return err.Message
	}
	return "UNKNOWN_CODE(" + itoa(int64(code)) + ")"
}

// dist summarizes h, its values divided by unit.
func dist(h *hdrhistogram.Histogram, unit float64) Dist {
	if h.TotalCount() == 0 {
		return Dist{}
	}
	return Dist{N: h.TotalCount(), P50: float64(h.ValueAtQuantile(50)) / unit, P90: float64(h.ValueAtQuantile(90)) / unit,
		Max: float64(h.Max()) / unit, Mean: h.Mean() / unit}
}

func share(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// RequestSharePct is RequestShare in percent (for report's page).
func (c Client) RequestSharePct() float64 { return 100 * c.RequestShare }
