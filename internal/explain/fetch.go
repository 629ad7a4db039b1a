package explain

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/fetchsplit"
	"github.com/kscope-dev/kscope/internal/recording"
)

// The APIs explain explains (Options.API).
const (
	APIProduce = "produce"
	APIFetch   = "fetch"
)

// APIs lists them, the default first.
func APIs() []string { return []string{APIProduce, APIFetch, APIGroup} }

// fetchCtx is what the causes see of a consumer fetch beyond a produce
// request's context: its split (internal/fetchsplit), the time it waited
// in purgatory (normal: no cause counts it), when its response started,
// and the part of it that counts as slow.
type fetchCtx struct {
	split     fetchsplit.Split
	purgatory interval
	respStart int64
	abnormal  int64 // ns
}

// fetchCand is a consumer fetch of the requests file: its line and
// split.
type fetchCand struct {
	pos   int64
	split fetchsplit.Split
}

// fetchScan reads the requests file once more, whole, through a fetch
// splitter: each consumer fetch's split, its reading from the traced
// network thread. The produce scan reads a few fields of each line; the
// split needs the partitions, so this pass runs for --api fetch only.
func (e *Explainer) fetchScan(rd recording.Reader, path string) ([]fetchCand, error) {
	sp := fetchsplit.New(fetchsplit.Options{})
	var cands []fetchCand
	err := rd.Lines(path, func(line []byte, pos int64) error {
		var r event.Request
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if r.APIKey != produceKey && r.APIKey != fetchKey {
			return nil
		}
		if err := rd.Window.CheckRequest(r.Arrival, r.End, r.LatencyMs, r.Answered); err != nil {
			return err
		}
		if s, ok := sp.AddWith(&r, e.fetchReading(&r)); ok {
			cands = append(cands, fetchCand{pos: pos, split: s})
		}
		return nil
	})
	return cands, err
}

// fetchReading is what the traces say of a fetch's reading: the
// network thread serving its connection asleep on a read from disk
// (diskWaits) while its response was leaving. All of it is from disk:
// reads from the page cache do not sleep.
func (e *Explainer) fetchReading(r *event.Request) fetchsplit.Reading {
	if !fetchsplit.Splittable(r) {
		return fetchsplit.Reading{}
	}
	ct, ok := e.idx.connThread(r.Client, r.Arrival.UnixNano())
	if !ok {
		return fetchsplit.Reading{}
	}
	E := r.End.UnixNano()
	send := interval{E - int64(max(r.ResponseMs, 0)*1e6), E}
	ivs := e.diskWaits(e.idx.waitsOverlapping(ct.TID, send.a, send.b), send)
	n := unionLen(ivs)
	return fetchsplit.Reading{Ns: n, DiskNs: n}
}

// diskWaits are the parts within span of the waits that slept on a read
// from disk (fromDisk).
func (e *Explainer) diskWaits(ws []event.KernelWait, span interval) []interval {
	var ivs []interval
	for _, kw := range ws {
		if e.fromDisk(&kw) {
			ivs = append(ivs, clipAll([]interval{{kw.Start.UnixNano(), kw.End.UnixNano()}}, span)...)
		}
	}
	return ivs
}

// pageAddSlack is how long before a wait the thread's adds to the page
// cache count for it: the pages are added, and their reads submitted,
// just before the thread sleeps on them.
const pageAddSlack = int64(time.Millisecond)

// fromDisk says whether a thread's wait was a read from disk: its kernel
// stack is on the path of a read of file pages, or the thread added
// pages to the page cache (the tracepoint filemap:mm_filemap_add_to_page_cache)
// just before or while it slept.
func (e *Explainer) fromDisk(kw *event.KernelWait) bool {
	if readsFromDisk(kw.Stack) {
		return true
	}
	return len(e.idx.pagesOverlapping(kw.TID, kw.Start.UnixNano()-pageAddSlack, kw.End.UnixNano())) > 0
}

// pageReadFrames are kernel functions on the path of a read of file
// pages (sendfile's splice, read, a fault) that sleeps only when the
// pages are not in the page cache.
var pageReadFrames = []string{"filemap_get_pages", "filemap_read", "filemap_splice_read", "generic_file_splice_read", "filemap_fault",
	"page_cache_sync_ra", "page_cache_async_ra", "folio_wait_bit_common", "wait_on_page_bit", "do_sendfile", "_readahead", "readpage"}

// readsFromDisk reports whether a kernel stack slept reading file pages.
func readsFromDisk(stack []string) bool {
	return slices.ContainsFunc(stack, func(fn string) bool {
		return slices.ContainsFunc(pageReadFrames, func(f string) bool { return strings.Contains(fn, f) })
	})
}

// runFetches explains the scan's slow consumer fetches: those whose part
// that was not purgatory is at or above the threshold.
func (e *Explainer) runFetches(rd recording.Reader, scan *Scan, opts RunOptions, emit func(*Finding) error) (*Summary, error) {
	e.fetches, e.groups, e.inFlight = scan.fetches, scan.groups, &scan.inFlight
	cands, err := e.fetchScan(rd, scan.path)
	if err != nil {
		return nil, err
	}
	abnormal := make([]float64, len(cands))
	for i, c := range cands {
		abnormal[i] = c.split.AbnormalMs
	}
	th := opts.Threshold
	if th == nil {
		decided, _ := DecideThreshold(e.cfg, nil, abnormal)
		th = &decided
	}
	rf, err := e.openRequests(scan.path)
	if err != nil {
		return nil, err
	}
	defer rf.close()
	limit := ms(int64(th.Latency))
	for _, c := range cands {
		if scan.only == nil && (c.split.AbnormalMs < limit || c.split.AbnormalMs <= 0) || scan.only != nil && c.pos != scan.onlyPos {
			continue
		}
		r, err := rf.read(c.pos)
		if err != nil {
			return nil, err
		}
		if err := emit(e.explainFetch(r, c.split)); err != nil {
			return nil, err
		}
	}
	if scan.only != nil && !slices.ContainsFunc(cands, func(c fetchCand) bool { return c.pos == scan.onlyPos }) {
		return nil, fmt.Errorf("request %s/%d is not an answered consumer fetch of %s", scan.only.Client, scan.only.CorrelationID, scan.path)
	}
	sum := e.Summary(0, th.Latency, th.From, opts.Top)
	sum.API, sum.FetchRequests = APIFetch, int64(len(cands))
	return sum, nil
}

// explainFetch classifies one answered consumer fetch of the given
// split: the causes measure it as they do a produce request, without
// its purgatory (the time it waited for data that was not there), and
// must account for Config.Share of its abnormal part.
func (e *Explainer) explainFetch(r *event.Request, sp fetchsplit.Split) *Finding {
	c := e.newRequest(r)
	f := c.f
	f.API, f.FetchSplit = r.API, &sp
	f.Group = e.groups[groupClientKey(r.Client, r.ClientID)]
	respStart := c.E - int64(sp.SendingMs*1e6+sp.ReadingMs*1e6)
	c.fetch = &fetchCtx{split: sp, purgatory: interval{c.brokerStart, c.brokerStart + int64(sp.PurgatoryMs*1e6)},
		respStart: respStart, abnormal: int64(sp.AbnormalMs * 1e6)}
	got := e.measure(c)
	for i := range got {
		withoutHold(&got[i], c.fetch.purgatory, c.fetch.abnormal)
	}
	dropHeldEvidence(f, c.fetch.purgatory)
	f.Shares = e.shares(got)
	c.L = c.fetch.abnormal
	e.name(c, got)
	f.Detail = e.detail(f, c.L)
	e.last[r.Client] = connLast{corr: r.CorrelationID, end: c.E, cause: f.Cause, measured: got}
	e.sum.add(f, e, nil)
	return f
}

// fetchPartitions are a fetch's partitions as a finding lists them:
// what the response returned of each.
func fetchPartitions(r *event.Request) []PartitionEvidence {
	out := make([]PartitionEvidence, 0, len(r.Partitions))
	for _, p := range r.Partitions {
		out = append(out, PartitionEvidence{Topic: p.Topic, Partition: p.Partition, Records: p.Records, Bytes: p.Bytes})
	}
	return out
}
