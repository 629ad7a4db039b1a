package bench

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/output"
)

// interruptedDrain bounds the end of an interrupted run: the user asked to
// stop, so outstanding acknowledgements and consumption get this long at
// most (or DrainTimeout, if shorter).
const interruptedDrain = 5 * time.Second

// deliveryTimeout is how long a record may wait for its acknowledgement
// before franz-go fails it.
const deliveryTimeout = 2 * time.Minute

// startDelay is the time between the start of the producers' goroutines
// and the first due message, so none of them begins late.
const startDelay = 50 * time.Millisecond

// Run connects to the cluster, creates missing topics, starts the
// consumers (one group), produces on the open-loop schedule (or as fast as
// the clients accept, with RateMax) for Warmup+Duration, waits for the
// outstanding acknowledgements and for the consumers to see every
// acknowledged message (DrainTimeout), and returns what was measured.
//
// Cancelling ctx (Ctrl-C) ends the run early: no new messages are sent,
// outstanding ones and the consumers get a short drain, and the result,
// marked Interrupted, holds what was measured until then. An error is
// returned only when nothing could be measured; problems with the request
// (bad settings, unreachable cluster, a topic that cannot be created) are
// *InputError.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	s, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	cpu0 := cpuSeconds()
	r := &run{s: s, clk: newClock(), stop: make(chan struct{}), out: s.Progress}
	r.requests.r = r
	var idb [4]byte
	_, _ = crand.Read(idb[:])
	r.id = binary.BigEndian.Uint32(idb[:])

	adm, versions, err := connect(ctx, &r.s)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	infos, err := ensureTopics(ctx, adm, &r.s)
	if err != nil {
		return nil, err
	}
	env := environment(ctx, adm, s.Bootstrap, versions)
	for _, ti := range infos {
		r.topics = append(r.topics, ti.name)
		r.partitions += ti.partitions
		if s.Partitions > 0 && ti.partitions != int(s.Partitions) {
			fmt.Fprintf(r.out, "bench: topic %s exists with %d partitions (not %d); using it as it is\n", ti.name, ti.partitions, s.Partitions)
		}
	}

	r.payloads = newPayloads(s.size, s.Compressibility, uint64(r.id))
	r.keys = newKeys(s.keys)
	for i := 0; i < s.Headers; i++ {
		r.extraHdrs = append(r.extraHdrs, kgo.RecordHeader{Key: fmt.Sprintf("h%d", i), Value: []byte(fmt.Sprintf("value-%d", i))})
	}
	r.secs = newSeconds()
	r.ledger = newLedger(s.Producers)
	r.msgs.New = func() any { return r.newMsg() }

	// The consumers first: the group holds its partitions before the load
	// begins.
	if err := r.startConsumers(ctx); err != nil {
		r.closeConsumers()
		return nil, err
	}
	if err := r.newProducers(); err != nil {
		r.closeConsumers()
		return nil, err
	}
	res := r.produce(ctx)
	r.finish(res, infos, env, cpu0)
	return res, nil
}

// run is one benchmark run in progress.
type run struct {
	s   settings
	clk *clock
	id  uint32 // in every message id: this run's records
	out io.Writer

	topics     []string
	partitions int // over all topics
	payloads   *payloads
	keys       *keys
	extraHdrs  []kgo.RecordHeader
	msgs       sync.Pool // *msg, reused once their promise has returned

	sched        schedule
	t0           int64 // the first due time
	measureStart int64 // the warm-up's end
	plannedEnd   int64
	// windowEnd is the end of the measured part: plannedEnd, or the
	// moment the run was interrupted.
	windowEnd   atomic.Int64
	interrupted atomic.Bool
	stop        chan struct{} // closed: send no more
	stopOnce    sync.Once

	producers []*producer
	consumers []*consumer
	consumeWG sync.WaitGroup
	cancelC   context.CancelFunc
	secs      *seconds
	ledger    *ledger
	requests  requestCounter
}

func (r *run) halt(interrupted bool) {
	r.stopOnce.Do(func() {
		if interrupted {
			r.interrupted.Store(true)
			if now := r.clk.now(); now < r.windowEnd.Load() {
				r.windowEnd.Store(max(now, r.measureStart))
			}
		}
		close(r.stop)
	})
}

// msg is one message in flight. Its record points back to it through
// Record.Context (a pointer in an interface: no allocation), so the
// promise finds the send times without a map. The embedded Context is
// context.Background: kgo reads Record.Context to cancel buffered records,
// and these are never cancelled that way.
type msg struct {
	context.Context
	rec      kgo.Record
	hdrs     []kgo.RecordHeader
	id       [idLen]byte
	ts       [8]byte
	seq      uint64
	intended int64
	sent     int64
	measured bool
}

func (r *run) newMsg() *msg {
	m := &msg{Context: context.Background()}
	m.hdrs = make([]kgo.RecordHeader, 2, 2+len(r.extraHdrs))
	m.hdrs[0] = kgo.RecordHeader{Key: idHeader, Value: m.id[:]}
	m.hdrs[1] = kgo.RecordHeader{Key: tsHeader, Value: m.ts[:]}
	m.hdrs = append(m.hdrs, r.extraHdrs...)
	return m
}

// producer is one producing client and its measurements.
type producer struct {
	r         *run
	id        int
	cl        *kgo.Client
	rng       *rand.Rand
	wg        sync.WaitGroup // messages whose outcome is not known yet
	promiseFn func(*kgo.Record, error)
	done      chan error // --sync: the promise's result
	closeOnce sync.Once

	// Owned by the producer's goroutine; read after it ended.
	sent    uint64
	sentSec []int64 // messages sent per second of the measured part

	mu            sync.Mutex // the promise (or sync loop) vs progress and the end
	rec           *recorder
	acked         bitset
	nAcked        int64
	nFailed       int64
	bytes         int64
	ackedInWindow int64
	bytesInWindow int64
	firstErr      error

	// For the progress line.
	aAcked, aBytes, aFailed atomic.Int64

	// --sync: when the last produce response was read, and its round trip
	// (kgo's HookBrokerE2E).
	readAt, rtt atomic.Int64
}

// OnBrokerE2E is kgo's hook, called on the connection's reading goroutine
// as soon as a response has been read, before the client handles it: the
// moment the broker's acknowledgement reached the client.
func (p *producer) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key != 0 || e.Err() != nil { // 0: Produce
		return
	}
	p.rtt.Store(int64(e.DurationE2E()))
	p.readAt.Store(p.r.clk.now())
}

func (r *run) newProducers() error {
	s := &r.s
	for i := 0; i < s.Producers; i++ {
		p := &producer{r: r, id: i, rng: rand.New(rand.NewPCG(uint64(i), uint64(r.id)))}
		opts := []kgo.Opt{
			kgo.SeedBrokers(s.Bootstrap...),
			kgo.ClientID(fmt.Sprintf("kscope-bench-p%d", i)),
			kgo.RequiredAcks(s.acks),
			kgo.ProducerBatchCompression(s.codec),
			kgo.ProducerLinger(s.Linger),
			kgo.ProducerBatchMaxBytes(int32(s.BatchBytes)),
			// A broker that never answers fails records after this, rather
			// than leaving the run waiting for ever.
			kgo.RecordDeliveryTimeout(deliveryTimeout),
			kgo.WithHooks(&r.requests),
		}
		if !s.Idempotent {
			opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(s.MaxInFlight))
		}
		if s.Sync {
			p.done = make(chan error, 1)
			if s.ackSet {
				opts = append(opts, kgo.WithHooks(p))
			}
			p.promiseFn = func(_ *kgo.Record, err error) { p.done <- err }
		} else {
			p.promiseFn = p.promise
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			r.closeProducers()
			return fmt.Errorf("bench: producer client: %w", err)
		}
		p.cl = cl
		r.producers = append(r.producers, p)
	}
	return nil
}

// promise is the async mode's kgo promise: the acknowledgement (or
// failure) of one message. Promises are called serially per client.
func (p *producer) promise(rec *kgo.Record, err error) {
	m := rec.Context.(*msg)
	now := p.r.clk.now()
	p.mu.Lock()
	p.settle(m, now, err)
	p.mu.Unlock()
	p.r.msgs.Put(m)
	p.wg.Done()
}

// settle accounts for message m's outcome at time now. p.mu is held.
func (p *producer) settle(m *msg, now int64, err error) {
	if err != nil {
		p.nFailed++
		if p.firstErr == nil {
			p.firstErr = err
		}
		if a := p.rec.at(now); a != nil {
			a.errors++
		}
		p.aFailed.Add(1)
		return
	}
	n := int64(len(m.rec.Value))
	p.acked.set(m.seq)
	p.nAcked++
	p.bytes += n
	if now >= p.r.measureStart && now < p.r.windowEnd.Load() {
		p.ackedInWindow++
		p.bytesInWindow += n
	}
	if a := p.rec.at(now); a != nil {
		a.acked++
		a.bytes += n
	}
	if m.measured {
		p.rec.latency(sService, now, now-m.sent)
		p.rec.latency(sResponse, now, now-m.intended)
	}
	p.aAcked.Add(1)
	p.aBytes.Add(n)
}

// loop sends producer p's messages: on the schedule (each message at its
// due time, overdue ones at once and still timed from their due time), or
// as fast as the client accepts them.
func (p *producer) loop() {
	r := p.r
	s := &r.s
	if s.timed {
		lockThread()
	}
	sl := sleeper{clk: r.clk}
	nTopics := uint64(len(r.topics))
	if !s.timed && !sl.until(r.t0, r.stop) { // --rate max starts at t0 too
		return
	}
	for seq := uint64(0); ; seq++ {
		var intended int64
		if s.timed {
			intended = r.sched.due(p.id, seq)
			if intended >= r.plannedEnd || !sl.until(intended, r.stop) {
				return
			}
		}
		select {
		case <-r.stop:
			return
		default:
		}
		m := r.msgs.Get().(*msg)
		now := r.clk.now()
		if !s.timed {
			if now >= r.plannedEnd {
				r.msgs.Put(m)
				return
			}
			intended = now
		}
		m.seq, m.intended, m.sent = seq, intended, now
		m.measured = intended >= r.measureStart
		id := msgID{run: r.id, producer: uint32(p.id), seq: seq}
		if m.measured {
			id.flags |= flagMeasured
		}
		id.put(&m.id)
		binary.BigEndian.PutUint64(m.ts[:], uint64(now))
		m.rec = kgo.Record{
			Topic:   r.topics[seq%nTopics],
			Key:     r.keys.next(p.rng, seq),
			Value:   r.payloads.next(p.rng),
			Headers: m.hdrs,
			Context: m,
		}
		if now >= r.measureStart {
			sec := int((now - r.measureStart) / 1e9)
			for len(p.sentSec) <= sec {
				p.sentSec = append(p.sentSec, 0)
			}
			p.sentSec[sec]++
		}
		p.wg.Add(1)
		p.sent = seq + 1
		// No context: kgo cancels buffered records whose Produce context
		// is done, and an interrupted run still waits for its messages.
		p.cl.Produce(context.Background(), &m.rec, p.promiseFn)
		if s.Sync {
			p.waitSync(m)
		}
	}
}

// waitSync waits for the acknowledgement of the one message in flight.
// The application is told when this goroutine wakes up; sync_wait is the
// time from the response being read (the hook) to then.
func (p *producer) waitSync(m *msg) {
	err := <-p.done
	told := p.r.clk.now()
	p.mu.Lock()
	p.settle(m, told, err)
	if err == nil && m.measured && p.r.s.ackSet {
		if readAt := p.readAt.Load(); readAt > m.sent {
			p.rec.latency(sSyncWait, told, told-readAt)
			p.rec.latency(sBrokerRTT, told, p.rtt.Load())
		}
	}
	p.mu.Unlock()
	p.r.msgs.Put(m)
	p.wg.Done()
}

// produce runs the producers until the plan is done or ctx is cancelled,
// then waits for the outstanding acknowledgements and the consumers.
func (r *run) produce(ctx context.Context) *Result {
	s := &r.s
	r.t0 = r.clk.now() + int64(startDelay)
	r.measureStart = r.t0 + int64(s.Warmup)
	r.plannedEnd = r.measureStart + int64(s.Duration)
	r.windowEnd.Store(r.plannedEnd)
	r.requests.start.Store(r.measureStart)
	r.sched = schedule{t0: r.t0, rate: s.Rate, n: s.Producers}
	series := []int{sService, sResponse}
	if s.Sync && s.ackSet {
		series = append(series, sSyncWait, sBrokerRTT)
	}
	for _, p := range r.producers {
		p.rec = newRecorder(r.measureStart, r.secs, series...)
	}
	for _, c := range r.consumers {
		c.rec.Store(newRecorder(r.measureStart, r.secs, sEndToEnd))
	}
	res := &Result{Version: ResultVersion, Tool: "kscope bench run", Start: time.Unix(0, r.t0)}
	if s.OnStart != nil {
		s.OnStart(time.Unix(0, r.t0), time.Unix(0, r.measureStart))
	}

	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	progressWG.Add(1)
	go func() { defer progressWG.Done(); r.progress(progressDone) }()

	var pwg sync.WaitGroup
	for _, p := range r.producers {
		pwg.Add(1)
		go func() { defer pwg.Done(); p.loop() }()
	}
	sendingDone := make(chan struct{})
	go func() { pwg.Wait(); close(sendingDone) }()
	select {
	case <-sendingDone:
		r.halt(false)
	case <-ctx.Done():
		r.halt(true)
		fmt.Fprintf(r.out, "bench: interrupted: no more messages are sent\n")
	}
	drain := s.DrainTimeout
	if r.interrupted.Load() {
		drain = min(drain, interruptedDrain)
	}
	select {
	case <-sendingDone:
	case <-r.drainTimer(ctx, drain):
		// A producer is blocked in Produce on a full buffer (the broker
		// does not answer): closing the clients fails what they hold.
		fmt.Fprintf(r.out, "bench: producers still blocked after %v: closing them (their messages count as failed)\n", drain)
		r.closeProducers()
		<-sendingDone
	}
	r.awaitAcks(ctx, drain)
	r.awaitConsumers(ctx, drain)
	close(progressDone)
	progressWG.Wait()
	r.closeConsumers()
	r.closeProducers()
	return res
}

// drainTimer fires after d; if ctx is cancelled (Ctrl-C during the drain)
// before, it fires at most interruptedDrain later, and the run counts as
// interrupted: its accounting may be cut short.
func (r *run) drainTimer(ctx context.Context, d time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return
		case <-ctx.Done():
		}
		if !r.interrupted.Swap(true) {
			fmt.Fprintf(r.out, "bench: interrupted: ending the drain within %v\n", interruptedDrain)
		}
		short := time.NewTimer(interruptedDrain)
		defer short.Stop()
		select {
		case <-t.C:
		case <-short.C:
		}
	}()
	return ch
}

// awaitAcks waits up to d for every sent message's outcome; then the
// producer clients are closed, which fails what is still outstanding.
func (r *run) awaitAcks(ctx context.Context, d time.Duration) {
	all := make(chan struct{})
	go func() {
		for _, p := range r.producers {
			p.wg.Wait()
		}
		close(all)
	}()
	select {
	case <-all:
		return
	case <-r.drainTimer(ctx, d):
	}
	fmt.Fprintf(r.out, "bench: acknowledgements still outstanding: closing the producers (what they hold counts as failed)\n")
	r.closeProducers()
	<-all
}

// closeProducers closes every producer client (once; kgo's Close is not
// idempotent under concurrent use). A closed client fails what it still
// holds, and any later Produce at once.
func (r *run) closeProducers() {
	var wg sync.WaitGroup
	for _, p := range r.producers {
		wg.Add(1)
		go func() { defer wg.Done(); p.closeOnce.Do(p.cl.Close) }()
	}
	wg.Wait()
}

// progress prints one line per second until done is closed.
func (r *run) progress(done <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	agg := newHist()
	var lastAcked, lastBytes int64
	last := r.clk.now()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		now := r.clk.now()
		var acked, bytes, failed int64
		agg.Reset()
		for _, p := range r.producers {
			acked += p.aAcked.Load()
			bytes += p.aBytes.Load()
			failed += p.aFailed.Load()
			p.mu.Lock()
			if p.rec != nil {
				agg.Merge(p.rec.total[sResponse])
			}
			p.mu.Unlock()
		}
		var consumed int64
		for _, c := range r.consumers {
			consumed += c.consumed.Load()
			failed += c.errors.Load()
		}
		dt := float64(now-last) / 1e9
		phase := "warm-up"
		switch {
		case now >= r.plannedEnd || isClosed(r.stop):
			phase = "draining"
		case now >= r.measureStart:
			phase = fmt.Sprintf("%3ds", (now-r.measureStart)/1e9)
		}
		p99 := "-"
		if agg.TotalCount() > 0 {
			p99 = fmt.Sprintf("%.3f ms", float64(agg.ValueAtPercentile(99))/1000)
		}
		line := fmt.Sprintf("bench: %-8s %8.0f msg/s %8.2f MB/s  response p99 %s  acked %d  errors %d",
			phase, float64(acked-lastAcked)/dt, float64(bytes-lastBytes)/1e6/dt, p99, acked, failed)
		if len(r.consumers) > 0 {
			line += fmt.Sprintf("  consumed %d", consumed)
		}
		fmt.Fprintln(r.out, line)
		lastAcked, lastBytes, last = acked, bytes, now
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// finish fills the result once every goroutine has stopped: what ran,
// the totals, the latencies and the per-second series.
func (r *run) finish(res *Result, infos []topicInfo, env Environment, cpu0 float64) {
	end := r.clk.now()
	res.End = time.Unix(0, end)
	res.Interrupted = r.interrupted.Load()
	windowEnd := r.windowEnd.Load()
	measured := max(windowEnd-r.measureStart, 0)
	warmup := min(int64(r.s.Warmup), max(windowEnd-r.t0, 0))

	r.describe(res, infos, measured, warmup)
	res.Environment = env
	recs := r.totals(&res.Totals, measured, cpu0)
	res.Latency = r.latencies(recs)
	res.Series = r.perSecond(measured)
}

// describe fills what the run was: its workload as it ran (the measured
// and warm-up durations, the topics' layout) and the client's settings.
func (r *run) describe(res *Result, infos []topicInfo, measured, warmup int64) {
	s := &r.s
	res.Workload = Workload{
		Topics: r.topics, Producers: s.Producers, Consumers: s.Consumers,
		Rate: s.Rate, RateMax: s.RateMax, Sync: s.Sync,
		DurationMs: measured / 1e6, WarmupMs: warmup / 1e6,
		MessageSize: s.MessageSize, Keys: s.Keys, Compressibility: s.Compressibility, Headers: s.Headers,
	}
	if len(infos) > 0 {
		res.Workload.Partitions = int32(infos[0].partitions)
		res.Workload.ReplicationFactor = int16(infos[0].replicas)
	}
	inFlight := s.MaxInFlight
	if s.Idempotent {
		inFlight = min(inFlight, 5)
	}
	res.Client = ClientConfig{
		Acks: s.Acks, Compression: s.Compression, LingerMs: float64(s.Linger) / 1e6,
		BatchBytes: s.BatchBytes, MaxInFlight: inFlight, Idempotent: s.Idempotent, Library: franzVersion(),
	}
}

// totals sums the producers' and consumers' counts into t, reconciles
// the ledger (lost and duplicated messages), and derives the rates over
// the measured part and the client's CPU. It prints the first failure
// and returns every recorder, whose histograms the latencies merge.
func (r *run) totals(t *Totals, measured int64, cpu0 float64) []*recorder {
	var ackedInWindow, bytesInWindow int64
	var firstErr error
	recs := make([]*recorder, 0, len(r.producers)+len(r.consumers))
	acked := make([]bitset, len(r.producers))
	sent := make([]uint64, len(r.producers))
	for i, p := range r.producers {
		p.mu.Lock()
		p.rec.flush()
		t.Sent += int64(p.sent)
		t.Acked += p.nAcked
		t.Failed += p.nFailed
		t.Bytes += p.bytes
		ackedInWindow += p.ackedInWindow
		bytesInWindow += p.bytesInWindow
		if p.firstErr != nil && firstErr == nil {
			firstErr = p.firstErr
		}
		acked[i], sent[i] = p.acked, p.sent
		p.mu.Unlock()
		for sec, n := range p.sentSec {
			r.secs.merge(sec, &secAgg{sent: n})
		}
		recs = append(recs, p.rec)
	}
	for _, c := range r.consumers {
		rec := c.rec.Load()
		rec.flush()
		recs = append(recs, rec)
	}
	if firstErr != nil {
		// The error may carry the broker's own message: escaped.
		fmt.Fprintf(r.out, "bench: %d messages failed; the first: %s\n", t.Failed, output.Escape(fmt.Sprint(firstErr)))
	}
	if len(r.consumers) > 0 {
		a := r.ledger.reconcile(acked, sent)
		t.Consumed = r.ledger.consumed
		t.Lost, t.Duplicated, t.ConsumedUnacked = a.lost, a.duplicated, a.consumedUnacked
		t.Foreign = r.ledger.foreign
	}
	var requests int64
	t.Requests, requests = r.requests.totals()
	if measured > 0 {
		t.MsgsPerSec = float64(ackedInWindow) / (float64(measured) / 1e9)
		t.MBPerSec = float64(bytesInWindow) / 1e6 / (float64(measured) / 1e9)
		t.RequestsPerSec = float64(requests) / (float64(measured) / 1e9)
	}
	t.ClientCPUSeconds = cpuSeconds() - cpu0
	if t.Acked > 0 {
		t.ClientCPUPerMsgUs = t.ClientCPUSeconds / float64(t.Acked) * 1e6
	}
	return recs
}

// latencies merges the recorders' histograms per series; a series no
// recorder has is left out.
func (r *run) latencies(recs []*recorder) map[string]*Latency {
	out := map[string]*Latency{}
	for i := 0; i < nSeries; i++ {
		h := newHist()
		used := false
		for _, rec := range recs {
			if rec.total[i] != nil {
				h.Merge(rec.total[i])
				used = true
			}
		}
		if !used {
			continue
		}
		l, err := latencyOf(h)
		if err != nil {
			fmt.Fprintf(r.out, "bench: %v\n", err)
			continue
		}
		out[seriesNames[i]] = l
	}
	return out
}

// perSecond is the per-second series: whole seconds of the measured
// part, and the last partial one if it is at least half a second long.
func (r *run) perSecond(measured int64) []Second {
	n, lastLen := int(measured/1e9), measured%1e9
	if lastLen >= 5e8 {
		n++
	} else {
		lastLen = 0
	}
	series, err := r.secs.series(n, lastLen)
	if err != nil {
		fmt.Fprintf(r.out, "bench: %v\n", err)
	}
	return series
}

// cpuSeconds is the user+system CPU time of this process so far.
func cpuSeconds() float64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
