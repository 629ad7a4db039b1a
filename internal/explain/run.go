package explain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/records"
	"github.com/kscope-dev/kscope/internal/safefile"
	"github.com/kscope-dev/kscope/internal/segment"
)

// LoadIO adds the events of iotrace JSON Lines files (a recording's
// writes.jsonl, journal.jsonl and sched.jsonl, or `kscope iotrace --format
// json` output) to idx.
func LoadIO(idx *Index, paths ...string) error {
	return LoadIOWith(recording.Reader{}, idx, paths...)
}

// LoadIOWith is LoadIO reading as rd says: events whose values cannot be
// true are left out of the index (and counted in rd.Tally).
func LoadIOWith(rd recording.Reader, idx *Index, paths ...string) error {
	h := idx.Handlers()
	for _, p := range paths {
		if err := rd.ReadIO(p, h); err != nil {
			return err
		}
	}
	return nil
}

// Handlers adds every kind of event ReadIO reads to x.
func (x *Index) Handlers() recording.IOHandlers {
	h := x.namedHandlers()
	event.PageCacheAddsKind.On(&h, func(p *event.PageCacheAdds) error { x.AddPageCacheAdds(p); return nil })
	return h
}

// namedHandlers are the handlers of the kinds with a field in Handlers.
func (x *Index) namedHandlers() recording.IOHandlers {
	return recording.IOHandlers{
		Write:      func(w *event.Write) error { x.AddWrite(w); return nil },
		Commit:     func(c *event.JournalCommit) error { x.AddCommit(c); return nil },
		Sync:       func(s *event.FileSync) error { x.Syncs++; x.AddSync(s); return nil },
		Block:      func(b *event.BlockIO) error { x.Blocks++; x.AddBlock(b); return nil },
		Wait:       func(k *event.KernelWait) error { x.AddWait(k); return nil },
		Steal:      func(s *event.CPUSteal) error { x.AddSteal(s); return nil },
		RunDelay:   func(r *event.RunDelay) error { x.AddRunDelay(r); return nil },
		Wakeup:     func(u *event.Wakeup) error { x.AddWakeup(u); return nil },
		ConnThread: func(c *event.ConnThread) error { x.AddConnThread(c); return nil },
		Throttle:   func(t *event.CPUThrottle) error { x.AddThrottle(t); return nil },
		JVMPause:   func(p *event.JVMPause) error { x.AddJVMPause(p); return nil },
	}
}

// LoadLockWaits adds a lockwaits.jsonl file to idx.
func LoadLockWaits(idx *Index, path string) error {
	return LoadLockWaitsWith(recording.Reader{}, idx, path)
}

// LoadLockWaitsWith is LoadLockWaits reading as rd says.
func LoadLockWaitsWith(rd recording.Reader, idx *Index, path string) error {
	return rd.ReadLockWaits(path, func(l *event.LockWait) error { idx.AddLockWait(l); return nil })
}

// RequestID names one request: its client "ip:port" (or just the port)
// and correlation id, as CLIENT/CORRELATION_ID.
type RequestID struct {
	Client        string
	CorrelationID int32
}

// ParseRequestID parses CLIENT/CORRELATION_ID.
func ParseRequestID(s string) (RequestID, error) {
	i := strings.LastIndexByte(s, '/')
	if i <= 0 {
		return RequestID{}, fmt.Errorf("request %q: want CLIENT/CORRELATION_ID, e.g. 127.0.0.1:53412/4711", s)
	}
	id, err := strconv.ParseInt(s[i+1:], 10, 32)
	if err != nil {
		return RequestID{}, fmt.Errorf("request %q: correlation id: %w", s, err)
	}
	return RequestID{Client: s[:i], CorrelationID: int32(id)}, nil
}

func (id RequestID) matches(client string, corr int32) bool {
	if corr != id.CorrelationID {
		return false
	}
	if client == id.Client {
		return true
	}
	_, port, err := net.SplitHostPort(client)
	return err == nil && port == id.Client
}

// RunOptions tune Run.
type RunOptions struct {
	// Top bounds the worst-of lists of the summary.
	Top int
	// Threshold is the slow threshold, decided (DecideThreshold); nil:
	// decided from the explainer's Config and the scan's latencies.
	Threshold *SlowThreshold
}

// Kafka's API keys for Produce and Fetch.
const (
	produceKey = 0
	fetchKey   = 1
)

// Scan is the first pass over a requests JSON Lines file (a recording's
// requests.jsonl, or `kscope requests --format json` output): each
// answered produce request's latency and line position, nothing else, so
// that a million requests cost a few megabytes. It does not need the
// index, so it can run while the index loads.
type Scan struct {
	path    string
	cands   []cand
	only    *RequestID
	onlyPos int64
	conns   map[string]int32 // client "ip:port" → connection number
	clients map[string]string
	// FollowerFetches counts Fetch requests from replica fetchers (client
	// id broker-N-fetcher-M): evidence that acks=all waits on followers.
	FollowerFetches int64
	// fetches are the Fetch requests, answered or not, for the evidence
	// of a network thread blocked serving one and of the followers a
	// request waited for.
	fetches []fetchRef
	// inFlight: the answered produce requests' arrivals and ends, each
	// sorted: how many were in flight at a time (request-queue's wire
	// evidence).
	inFlight inFlight
	// stamps are the answered replica fetches as this capture saw them,
	// by connection and correlation id: with another broker's recording,
	// both ends of a follower's fetch connection (clock alignment, and
	// the follower's side of a leader's wait: peers.go, follower.go).
	stamps map[exchangeKey]fetchStamp
	// StampsDropped counts replica fetches not kept (beyond maxStamps).
	StampsDropped int64
	// produceTo counts produce requests by broker address (Addr).
	produceTo map[string]int
	// groups maps a consumer client ("host client-id") to the consumer
	// group its group requests named: the group behind a fetch.
	groups map[string]string
}

// fetchRef is a Fetch request: its line, connection and span (for one
// unanswered, see openFetches), and the fetching replica (-1: a consumer,
// or not known).
type fetchRef struct {
	pos          int64
	arrival, end int64 // unix ns
	client       string
	replica      int32
}

type cand struct {
	pos  int64
	lat  float64
	conn int32
}

// ScanRequests reads path once. With only set, it also finds that
// request's line.
func ScanRequests(path string, only *RequestID) (*Scan, error) {
	return ScanRequestsWith(recording.Reader{}, path, only)
}

// ScanRequestsWith is ScanRequests reading as rd says: a request whose
// latency or times cannot be true (recording.Window.CheckRequest) is
// left out of every statistic, and counted in rd.Tally, as is a last
// line cut short.
func ScanRequestsWith(rd recording.Reader, path string, only *RequestID) (*Scan, error) {
	s := &Scan{path: path, only: only, onlyPos: -1, conns: make(map[string]int32)}
	var (
		lite     liteRequest
		fetchers []string // each fetch's fetcher (openFetches)
		keyBuf   []byte
	)
	err := rd.Lines(path, func(line []byte, pos int64) error {
		r, err := readRequestLine(line, &lite)
		if err != nil {
			return err
		}
		if err := rd.Window.CheckRequest(r.arrival, r.end, r.lat, r.answered); err != nil {
			return err
		}
		if err := s.findOnly(line, pos); err != nil {
			return err
		}
		if r.key == fetchKey && (r.replica >= 0 || bytes.Contains(line, []byte(`"client_id":"broker-`)) && bytes.Contains(line, []byte(`-fetcher-`))) {
			s.FollowerFetches++
		}
		// A fetch counts from its arrival, answered or not: a follower's
		// (the capture may end while it waits for data), and a
		// consumer's whose connection closed while the broker sent it.
		if r.key == fetchKey && !r.arrival.IsZero() && r.answered == !r.end.IsZero() {
			a, e := r.arrival.UnixNano(), unixNano(r.end)
			s.fetches = append(s.fetches, fetchRef{pos: pos, arrival: a, end: e, client: s.intern(r.client), replica: r.replica})
			if r.replica >= 0 && e != 0 {
				s.addStamp(line, r.client, r.replica, a, e)
			}
			keyBuf = fetcherKey(keyBuf[:0], r.client, line)
			fetchers = append(fetchers, s.intern(keyBuf))
		}
		if r.key == produceKey && r.answered {
			s.addProduce(line, pos, &r)
		}
		if bytes.Contains(line, []byte(`"group":{"id":`)) {
			s.addGroup(line)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(s.inFlight.arrivals)
	slices.Sort(s.inFlight.ends)
	openFetches(s.fetches, fetchers)
	return s, nil
}

// maxGroupClients bounds the consumer clients mapped to their group.
const maxGroupClients = 100_000

// addGroup maps a group request's client to its group.
func (s *Scan) addGroup(line []byte) {
	var g struct {
		Client   string `json:"client"`
		ClientID string `json:"client_id"`
		Group    struct {
			ID string `json:"id"`
		} `json:"group"`
	}
	if json.Unmarshal(line, &g) != nil || g.Group.ID == "" {
		return
	}
	if s.groups == nil {
		s.groups = make(map[string]string)
	}
	k := groupClientKey(g.Client, g.ClientID)
	if _, ok := s.groups[k]; ok || len(s.groups) < maxGroupClients {
		s.groups[k] = g.Group.ID
	}
}

// groupClientKey is a consumer client: its host and client id (a
// consumer's fetch and group connections differ in port only).
func groupClientKey(client, clientID string) string {
	host := client
	if i := strings.LastIndexByte(client, ':'); i >= 0 {
		host = client[:i]
	}
	return host + " " + clientID
}

// addProduce keeps an answered produce request: a candidate for slow,
// on its connection, and in flight from its arrival to its end.
func (s *Scan) addProduce(line []byte, pos int64, r *requestLine) {
	if !r.arrival.IsZero() && !r.end.IsZero() {
		s.inFlight.arrivals = append(s.inFlight.arrivals, r.arrival.UnixNano())
		s.inFlight.ends = append(s.inFlight.ends, r.end.UnixNano())
	}
	conn, ok := s.conns[string(r.client)]
	if !ok {
		conn = int32(len(s.conns))
		s.conns[string(r.client)] = conn
		s.countBroker(line) // a connection has one broker end
	}
	s.cands = append(s.cands, cand{pos, r.lat, conn})
}

// findOnly notes line's position when it is the request asked for.
func (s *Scan) findOnly(line []byte, pos int64) error {
	if s.only == nil || s.onlyPos >= 0 {
		return nil
	}
	var who struct {
		Client        string `json:"client"`
		CorrelationID int32  `json:"correlation_id"`
	}
	who.CorrelationID = -1
	if err := json.Unmarshal(line, &who); err != nil {
		return err
	}
	if s.only.matches(who.Client, who.CorrelationID) {
		s.onlyPos = pos
	}
	return nil
}

// requestLine is what the first pass reads of a request line.
type requestLine struct {
	key      int
	answered bool
	lat      float64
	client   []byte
	replica  int32     // a Fetch's replica id; -1 for none
	arrival  time.Time // zero when the line has none
	end      time.Time // zero when unanswered
}

// liteRequest decodes requestLine's fields from a line whose layout is
// not kscope's own.
type liteRequest struct {
	APIKey    int16     `json:"api_key"`
	Answered  bool      `json:"answered"`
	LatencyMs float64   `json:"latency_ms"`
	Client    string    `json:"client"`
	ReplicaID *int32    `json:"replica_id"`
	Arrival   time.Time `json:"arrival"`
	End       time.Time `json:"end"`
}

// readRequestLine reads a request line's fields: from kscope's own layout
// without decoding the rest (a request's partitions and message ids are
// most of its bytes), else by decoding the line (into lite, reused).
func readRequestLine(line []byte, lite *liteRequest) (requestLine, error) {
	if key, answered, lat, client, ok := scanFields(line); ok {
		if a, e, ok := scanTimes(line); ok {
			r := requestLine{key: key, answered: answered, lat: lat, client: client, replica: -1, arrival: a, end: e}
			if key == fetchKey {
				r.replica = scanReplica(line)
			}
			return r, nil
		}
	}
	*lite = liteRequest{APIKey: -1}
	if err := json.Unmarshal(line, lite); err != nil {
		return requestLine{}, err
	}
	r := requestLine{key: int(lite.APIKey), answered: lite.Answered, lat: lite.LatencyMs, client: []byte(lite.Client),
		replica: -1, arrival: lite.Arrival, end: lite.End}
	if lite.ReplicaID != nil {
		r.replica = *lite.ReplicaID
	}
	return r, nil
}

// unixNano is t in Unix nanoseconds, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// Latencies are the answered produce requests' latencies, in
// milliseconds.
func (s *Scan) Latencies() []float64 {
	lats := make([]float64, len(s.cands))
	for i, c := range s.cands {
		lats[i] = c.lat
	}
	return lats
}

// inFlight counts requests in flight from their sorted arrivals and ends.
type inFlight struct{ arrivals, ends []int64 }

// at is the number of requests that had arrived and not ended at t.
func (f *inFlight) at(t int64) int {
	a, _ := slices.BinarySearch(f.arrivals, t+1)
	e, _ := slices.BinarySearch(f.ends, t+1)
	return a - e
}

// intern returns client as a string shared by every line of its
// connection.
func (s *Scan) intern(client []byte) string {
	if s.clients == nil {
		s.clients = make(map[string]string)
	}
	if c, ok := s.clients[string(client)]; ok {
		return c
	}
	c := string(client)
	s.clients[c] = c
	return c
}

// scanTimes reads arrival and end from a request line as kscope writes
// it; end is zero when the line has none (unanswered).
func scanTimes(line []byte) (arrival, end time.Time, ok bool) {
	field := func(key string) (time.Time, bool) {
		i := bytes.Index(line, []byte(key))
		if i < 0 {
			return time.Time{}, false
		}
		v := line[i+len(key):]
		j := bytes.IndexByte(v, '"')
		if j < 0 {
			return time.Time{}, false
		}
		t, err := time.Parse(time.RFC3339Nano, string(v[:j]))
		return t, err == nil
	}
	a, ok := field(`"arrival":"`)
	if !ok {
		return time.Time{}, time.Time{}, false
	}
	if !bytes.Contains(line, []byte(`"end":"`)) {
		return a, time.Time{}, true
	}
	e, ok := field(`"end":"`)
	return a, e, ok
}

// scanReplica reads a Fetch request line's replica_id: -1 when absent (a
// consumer, or a line from before kscope decoded it) or odd.
func scanReplica(line []byte) int32 {
	id, ok := scanInt(line, `"replica_id":`)
	if !ok {
		return -1
	}
	return int32(id)
}

// scanFields reads api_key, answered, latency_ms and client from a request line
// as kscope writes it, without decoding the rest (a request's partitions
// and message ids are most of its bytes). A top-level key followed by a
// colon cannot occur inside a JSON string, where its quotes would be
// escaped; kscope's nested objects (partitions) have no such keys. ok is
// false when a field is missing or odd: the caller then
// decodes the line properly.
func scanFields(line []byte) (apiKey int, answered bool, latencyMs float64, client []byte, ok bool) {
	k, ok1 := scanNumber(line, `"api_key":`)
	a, ok2 := scanNumber(line, `"answered":`)
	l, ok3 := scanNumber(line, `"latency_ms":`)
	if !ok1 || !ok2 || !ok3 {
		return 0, false, 0, nil, false
	}
	key, err := strconv.Atoi(string(k))
	if err != nil {
		return 0, false, 0, nil, false
	}
	lat, err := strconv.ParseFloat(string(l), 64)
	if err != nil {
		return 0, false, 0, nil, false
	}
	switch string(a) {
	case "true":
		answered = true
	case "false":
	default:
		return 0, false, 0, nil, false
	}
	// "ip:port" has no character JSON escapes: it ends at the next quote.
	c, ok := scanString(line, `"client":"`)
	if !ok {
		return 0, false, 0, nil, false
	}
	return key, answered, lat, c, true
}

// Run explains the slow produce requests of a scanned file against the
// index, calling emit for each in file order: only the slow requests'
// lines are read again and decoded.
func (e *Explainer) Run(scan *Scan, opts RunOptions, emit func(*Finding) error) (*Summary, error) {
	e.followers = scan.FollowerFetches > 0
	e.fetches = scan.fetches
	e.groups = scan.groups
	e.inFlight = &scan.inFlight
	e.sum.FollowerFetches = scan.FollowerFetches
	th := opts.Threshold
	if th == nil {
		decided, _ := DecideThreshold(e.cfg, nil, scan.Latencies())
		th = &decided
	}

	rf, err := e.openRequests(scan.path)
	if err != nil {
		return nil, err
	}
	defer rf.close()
	run := &slowRun{e: e, scan: scan, rf: rf, prev: connChains(scan), explained: make(map[int32]bool), emit: emit}
	if scan.only != nil {
		err = run.only()
	} else {
		err = run.all(ms(int64(th.Latency)))
	}
	if err != nil {
		return nil, err
	}
	return e.Summary(int64(len(scan.cands)), th.Latency, th.From, opts.Top), nil
}

// connChains is, for each candidate, the previous produce request on its
// connection (-1: none).
func connChains(scan *Scan) []int32 {
	prev := make([]int32, len(scan.cands))
	lastOn := make([]int32, len(scan.conns))
	for i := range lastOn {
		lastOn[i] = -1
	}
	for i, c := range scan.cands {
		prev[i] = lastOn[c.conn]
		lastOn[c.conn] = int32(i)
	}
	return prev
}

// slowRun explains a scan's slow requests (or the one asked for), each
// after the requests it may have queued behind on its connection.
type slowRun struct {
	e         *Explainer
	scan      *Scan
	rf        *requestFile
	prev      []int32 // connChains
	explained map[int32]bool
	emit      func(*Finding) error
}

// all explains every candidate at or above limit (ms), in file order.
func (r *slowRun) all(limit float64) error {
	for i, c := range r.scan.cands {
		if c.lat >= limit {
			if err := r.explainAt(int32(i), c.pos); err != nil {
				return err
			}
		}
	}
	return nil
}

// only explains the request asked for.
func (r *slowRun) only() error {
	s := r.scan
	if s.onlyPos < 0 {
		return fmt.Errorf("request %s/%d is not in %s", s.only.Client, s.only.CorrelationID, s.path)
	}
	i := int32(-1)
	for k, c := range s.cands {
		if c.pos == s.onlyPos {
			i = int32(k)
		}
	}
	return r.explainAt(i, s.onlyPos)
}

// explainAt explains the request at pos, candidate i (-1: not one).
func (r *slowRun) explainAt(i int32, pos int64) error {
	req, err := r.rf.read(pos)
	if err != nil {
		return err
	}
	if req.APIKey != produceKey || !req.Answered || req.End.IsZero() {
		what := "a " + recording.Excerpt([]byte(req.API), 40) + " request"
		if !req.Answered {
			what += " without a response"
		}
		if i >= 0 { // the scan read it as one: its fields say two things (a key twice)
			return r.rf.lineError(pos, nil, fmt.Errorf("read first as an answered produce request, then as %s", what))
		}
		return fmt.Errorf("request %s/%d is %s: explain explains answered produce requests", recording.Excerpt([]byte(req.Client), 80), req.CorrelationID, what)
	}
	if i >= 0 && req.QueuedMs > 0 {
		if err := r.context(i); err != nil {
			return err
		}
	}
	if i >= 0 {
		r.explained[i] = true
	}
	return r.emit(r.e.Explain(req))
}

// maxChain bounds how far back context follows a connection.
const maxChain = 16

// context explains, without counting, the requests before cand i on its
// connection that it may have queued behind, oldest first, so that a
// chain of pipelined requests leads back to the one that was held up (at
// most maxChain back).
func (r *slowRun) context(i int32) error {
	var chain []int32
	for p := r.prev[i]; p >= 0 && len(chain) < maxChain && !r.explained[p]; p = r.prev[p] {
		chain = append(chain, p)
	}
	for k := len(chain) - 1; k >= 0; k-- {
		req, err := r.rf.read(r.scan.cands[chain[k]].pos)
		if err != nil {
			return err
		}
		r.e.explain(req, false)
		r.explained[chain[k]] = true
	}
	return nil
}

// requestFile reads again, by position, the lines of a requests file the
// scan chose; its errors name the line and quote at most an excerpt.
type requestFile struct {
	path string
	f    *os.File
	buf  []byte
	in   *safefile.Input
}

// openRequests opens a requests file to read its lines by position, as
// the explainer's reader of requests.
func (e *Explainer) openRequests(path string) (*requestFile, error) {
	in, err := safefile.Open(path, safefile.Regular)
	if err != nil {
		return nil, err
	}
	rf := &requestFile{path: path, f: in.File(), in: in}
	e.readRequest = rf.read
	return rf, nil
}

func (rf *requestFile) close() error { return rf.in.Close() }

// read decodes the request whose line starts at pos.
func (rf *requestFile) read(pos int64) (*event.Request, error) {
	line, err := recording.ReadLineAt(rf.f, pos, rf.buf)
	if err != nil {
		return nil, rf.lineError(pos, nil, err)
	}
	rf.buf = line[:0]
	var r event.Request
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, rf.lineError(pos, line, err)
	}
	return &r, nil
}

// lineError is err about the line at pos, numbered.
func (rf *requestFile) lineError(pos int64, line []byte, err error) error {
	n, lerr := recording.LineNumber(rf.f, pos)
	if lerr != nil {
		n = 0
	}
	return recording.NewLineError(rf.path, n, pos, line, err)
}

// SegmentLookup returns an IDLookup that reads the message ids (record
// header header) of a write's bytes from the segment file, found under
// the log directories when the write names it relatively.
func SegmentLookup(logDirs []string, header string) IDLookup {
	dec := new(records.Decoder)
	return func(file string, offset, n int64) ([]string, error) {
		path := file
		if !filepath.IsAbs(file) {
			path = ""
			for _, d := range logDirs {
				p := filepath.Join(d, file)
				if _, err := os.Stat(p); err == nil {
					path = p
					break
				}
			}
			if path == "" {
				return nil, fmt.Errorf("%s: not found under %s", file, strings.Join(logDirs, ", "))
			}
		}
		res, err := segment.Lookup(path, offset, n, header, dec)
		var ids []string
		for _, m := range res.Matches {
			ids = append(ids, m.MessageIDs...)
		}
		return ids, err
	}
}

// scanString reads a top-level string field that JSON does not escape
// (an address) from a request line as kscope writes it.
func scanString(line []byte, key string) ([]byte, bool) {
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return nil, false
	}
	v := line[i+len(key):]
	j := bytes.IndexByte(v, '"')
	if j < 0 || bytes.IndexByte(v[:j], '\\') >= 0 {
		return nil, false
	}
	return v[:j], true
}

// scanNumber reads a top-level number (or true/false) field: up to the
// next comma or closing brace.
func scanNumber(line []byte, key string) ([]byte, bool) {
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return nil, false
	}
	v := line[i+len(key):]
	j := bytes.IndexAny(v, ",}")
	if j <= 0 {
		return nil, false
	}
	return v[:j], true
}

func scanInt(line []byte, key string) (int64, bool) {
	v, ok := scanNumber(line, key)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 32)
	return n, err == nil
}

func scanFloat(line []byte, key string) (float64, bool) {
	v, ok := scanNumber(line, key)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}
