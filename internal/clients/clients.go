// Package clients is the view behind kscope clients: from the decoded
// requests of a capture, a recording or the agent's live stream, one row
// per client of the cluster (by address, SASL principal and client id)
// saying which software it runs, how it uses the protocol, how it
// produces and consumes, whether it storms the brokers with connections
// or metadata requests, which of its requests a target Kafka release
// would reject, and a ranked list of what to fix (rules.go).
//
// Kafka has no API that lists its clients and its request metrics carry
// no client identity; the wire has all of it. The aggregator is a sink of
// the one decode pipeline: it takes *event.Request and nothing else.
package clients

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/connmap"
	"github.com/kscope-dev/kscope/internal/event"
)

// Target is the Kafka release an upgrade is checked against
// (releases.Release implements it).
type Target interface {
	// Range is the versions of API key the release accepts, served false
	// when it does not serve the API.
	Range(key int16) (min, max int16, served bool)
}

// rejects reports whether t rejects API key at version, and why. Only a
// version below the oldest it accepts is rejected: a client that asked
// ApiVersions uses the newest version both sides know, so a version above
// the target's newest is negotiated down, not rejected; and an API the
// target does not serve is one such a client does not send to it.
func rejects(t Target, targetName string, key, version int16) (bool, string) {
	lo, hi, served := t.Range(key)
	if !served || version >= lo {
		return false, ""
	}
	return true, fmt.Sprintf("Kafka %s accepts %s v%d-v%d", targetName, APIName(key), lo, hi)
}

// Options configure an Aggregator.
type Options struct {
	// Target, when set, flags every request that release would reject;
	// TargetName names it ("4.0").
	Target     Target
	TargetName string
	// MaxClients bounds the rows kept (0: DefaultMaxClients); requests
	// of further clients are counted in one row named "other".
	MaxClients int
	// MaxConnections bounds the connections followed (0:
	// DefaultMaxConnections); requests on further connections count
	// for their client, not for its connection figures.
	MaxConnections int
}

// Default bounds: a hostile or broken client population cannot make the
// aggregator hold more than this.
const (
	DefaultMaxClients     = 2000
	DefaultMaxConnections = 200_000
	// maxPreAuth is how many requests of a connection are held until its
	// principal is known: ApiVersions, SaslHandshake, SaslAuthenticate
	// (a few per connection) come before authentication.
	maxPreAuth = 8
)

// key identifies a client.
type key struct {
	host, principal, clientID string
}

// Aggregator turns requests into client rows. It is not safe for
// concurrent use.
type Aggregator struct {
	o       Options
	clients map[key]*client
	other   *client
	conns   *connmap.Map[conn]
	// untracked counts requests on connections beyond MaxConnections.
	untracked int64
	first     time.Time
	last      time.Time
	total     totals
}

// conn is one connection: its client once its principal is known, and
// the requests held until then.
type conn struct {
	c           *client
	first, last time.Time
	// apiVersions is the highest ApiVersions version the connection
	// sent, -1 for none seen.
	apiVersions int16
	held        []event.Request
	lastProduce time.Time
	// software is the software the connection's last request named and
	// softwareCount its client's count of it (client.countSoftware).
	software      softwareKey
	softwareCount *int64
	// lastAPI is the API version of the connection's last request and
	// lastUse its client's count of it (client.use).
	lastAPI apiVersion
	lastUse *use
}

// totals are the broker side's figures every share is taken of.
type totals struct {
	requests, bytes int64
}

// New returns an empty Aggregator.
func New(o Options) *Aggregator {
	o.MaxClients = cmp.Or(o.MaxClients, DefaultMaxClients)
	o.MaxConnections = cmp.Or(o.MaxConnections, DefaultMaxConnections)
	return &Aggregator{o: o, clients: map[key]*client{}, conns: connmap.New[conn]()}
}

// Add counts one request.
func (a *Aggregator) Add(r *event.Request) {
	if a.first.IsZero() || r.Arrival.Before(a.first) {
		a.first = r.Arrival
	}
	a.last = later(a.last, r.Arrival, r.End)
	a.total.requests++
	a.total.bytes += int64(r.RequestBytes + r.ResponseBytes)

	cn := a.connection(r)
	if cn == nil {
		a.untracked++
		a.clientFor(r, r.Principal).add(a, nil, r)
		return
	}
	cn.last = later(cn.last, r.Arrival, r.End)
	if r.APIKey == apiVersionsKey {
		cn.apiVersions = max(cn.apiVersions, r.APIVersion)
	}
	if cn.c != nil {
		cn.c.add(a, cn, r)
		return
	}
	// Before authentication a connection has no principal yet: hold its
	// first requests until it has one (or shows it never will).
	if r.Principal == "" && preAuth(r.APIKey) && len(cn.held) < maxPreAuth {
		held := *r
		// The agent's decoder lends r: its partitions' array is reused.
		held.Partitions = slices.Clone(r.Partitions)
		cn.held = append(cn.held, held)
		return
	}
	cn.c = a.clientFor(r, r.Principal)
	cn.c.conns++
	for i := range cn.held {
		cn.c.add(a, cn, &cn.held[i])
	}
	cn.held = nil
	cn.c.add(a, cn, r)
}

// Kafka API keys the view reads by number.
const (
	apiProduce        = 0
	apiFetch          = 1
	apiMetadata       = 3
	apiSaslHandshake  = 17
	apiVersionsKey    = 18
	apiSaslAuth       = 36
	apiJoinGroup      = 11
	apiHeartbeat      = 12
	apiSyncGroup      = 14
	apiConsumerGroupH = 68
)

func preAuth(key int16) bool {
	return key == apiVersionsKey || key == apiSaslHandshake || key == apiSaslAuth
}

// connection returns r's connection, nil past MaxConnections.
func (a *Aggregator) connection(r *event.Request) *conn {
	if cn := a.conns.Get(r.Conn, r.Client, r.Broker); cn != nil {
		return cn
	}
	if a.conns.Len() >= a.o.MaxConnections {
		return nil
	}
	cn := &conn{first: r.Arrival, apiVersions: -1}
	a.conns.Put(r.Conn, r.Client, r.Broker, cn)
	return cn
}

// clientFor returns the row of r's client, "other" past MaxClients.
func (a *Aggregator) clientFor(r *event.Request, principal string) *client {
	k := key{host: hostOf(r.Client), principal: principal, clientID: r.ClientID}
	if c, ok := a.clients[k]; ok {
		return c
	}
	if len(a.clients) >= a.o.MaxClients {
		if a.other == nil {
			a.other = newClient(key{host: "other"})
		}
		return a.other
	}
	c := newClient(k)
	a.clients[k] = c
	return c
}

// flush gives every connection still holding requests its client (at the
// end: the connection never authenticated).
func (a *Aggregator) flush() {
	for _, cn := range a.conns.All() {
		if cn.c != nil || len(cn.held) == 0 {
			continue
		}
		r := &cn.held[0]
		cn.c = a.clientFor(r, r.Principal)
		cn.c.conns++
		for i := range cn.held {
			cn.c.add(a, cn, &cn.held[i])
		}
		cn.held = nil
	}
}

// hostOf is the address part of "ip:port" ("" stays "").
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

func later(t time.Time, ts ...time.Time) time.Time {
	for _, u := range ts {
		if u.After(t) {
			t = u
		}
	}
	return t
}
