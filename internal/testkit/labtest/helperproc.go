package labtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kscope-dev/kscope/internal/lab"
)

// Helper processes: a test starts a job (e.g. a producer) in another
// process by re-executing its own test binary, so that the job can run
// where the test cannot, such as inside a network namespace (Netns).
//
// A test package that uses them must define the entry point, exactly so:
//
//	func TestLabtestHelperProcess(t *testing.T) { labtest.HelperProcess(t) }
//
// In a normal test run it does nothing; in the helper process it runs the
// job given in the environment and exits.

// HelperTestName is the test function the helper process runs.
const HelperTestName = "TestLabtestHelperProcess"

// helperEnv carries the job (JSON) to the helper process.
const helperEnv = "KSCOPE_LABTEST_HELPER_JOB"

// helperJob is what the helper process runs: one of its fields is set.
type helperJob struct {
	Produce *ProducerJob `json:"produce,omitempty"`
}

// HelperProcess is the body of TestLabtestHelperProcess: a no-op in a
// normal test run; in a helper process it runs the job, prints its result
// as one JSON line on stdout and exits (status 0, or 1 when the job could
// not run at all).
func HelperProcess(t *testing.T) {
	env := os.Getenv(helperEnv)
	if env == "" {
		return // not a helper process
	}
	var job helperJob
	if err := json.Unmarshal([]byte(env), &job); err != nil {
		fmt.Fprintf(os.Stderr, "labtest helper: bad job %q: %v\n", env, err)
		os.Exit(1)
	}
	var res any
	var err error
	switch {
	case job.Produce != nil:
		res, err = runProducer(*job.Produce)
	default:
		err = errors.New("empty job")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "labtest helper: %v\n", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(res)
	os.Stdout.Write(append(out, '\n'))
	os.Exit(0)
}

// ProducerJob configures NetnsProducer.
type ProducerJob struct {
	// Addr is the bootstrap broker, host:port (e.g. Netns.HostIP and the
	// port of a broker started with lab.BrokerConfig.AdvertisedHost).
	Addr string `json:"addr"`
	// Topic is produced to (auto-created).
	Topic string `json:"topic"`
	// ClientID is the Kafka client id; default "kscope-netns-producer".
	ClientID string `json:"client_id,omitempty"`
	// Rate is records per second; default 100.
	Rate int `json:"rate,omitempty"`
	// Duration is how long records are produced; default 5s.
	Duration time.Duration `json:"duration,omitempty"`
	// ValueBytes is each record's value size; default 100.
	ValueBytes int `json:"value_bytes,omitempty"`
	// Incompressible fills values with random bytes instead of one
	// repeated byte, so that the client's default compression cannot
	// shrink them (a test that needs the bytes on the wire).
	Incompressible bool `json:"incompressible,omitempty"`
	// FlushTimeout bounds the wait for outstanding records after Duration;
	// default 15s. Records not acknowledged by then count as Failed.
	FlushTimeout time.Duration `json:"flush_timeout,omitempty"`
}

func (j ProducerJob) withDefaults() ProducerJob {
	if j.ClientID == "" {
		j.ClientID = "kscope-netns-producer"
	}
	if j.Rate <= 0 {
		j.Rate = 100
	}
	if j.Duration <= 0 {
		j.Duration = 5 * time.Second
	}
	if j.ValueBytes <= 0 {
		j.ValueBytes = 100
	}
	if j.FlushTimeout <= 0 {
		j.FlushTimeout = 15 * time.Second
	}
	return j
}

// ProducerResult is what a producer helper reports when it exits.
type ProducerResult struct {
	// Start is when the first record was produced.
	Start time.Time `json:"start"`
	// Produced is the records handed to the client, Acked those the broker
	// acknowledged, Failed those that failed for good (including those
	// still outstanding at the end of the flush).
	Produced int64 `json:"produced"`
	Acked    int64 `json:"acked"`
	Failed   int64 `json:"failed"`
	// AckedPerSecond[i] is the records acknowledged in second i after
	// Start, so a test can tell whether the producer made progress after
	// some event.
	AckedPerSecond []int64 `json:"acked_per_second"`
	// Requests is the requests written to brokers (all APIs) and
	// ProduceRequests the Produce ones among them (kgo write hooks).
	Requests        int64 `json:"requests"`
	ProduceRequests int64 `json:"produce_requests"`
	// WriteErrors and ReadErrors are failed request writes and response
	// reads, ConnectErrors failed connection attempts, Disconnects closed
	// connections.
	WriteErrors   int64 `json:"write_errors"`
	ReadErrors    int64 `json:"read_errors"`
	ConnectErrors int64 `json:"connect_errors"`
	Disconnects   int64 `json:"disconnects"`
	// Errors are the first distinct error messages (records, connections).
	Errors []string `json:"errors,omitempty"`
}

// AckedAfter returns the records acknowledged from t on, to the second
// (the whole second containing t counts).
func (r ProducerResult) AckedAfter(t time.Time) int64 {
	from := max(int(t.Sub(r.Start)/time.Second), 0)
	var n int64
	for i := from; i < len(r.AckedPerSecond); i++ {
		n += r.AckedPerSecond[i]
	}
	return n
}

// producerStats is updated from kgo's goroutines.
type producerStats struct {
	requests, produceRequests, writeErrors, readErrors, connectErrors, disconnects atomic.Int64

	mu     sync.Mutex
	errors []string
}

func (s *producerStats) addError(err error) {
	msg := err.Error()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errors) < 8 && !strings.Contains(strings.Join(s.errors, "\x00"), msg) {
		s.errors = append(s.errors, msg)
		fmt.Fprintf(os.Stderr, "labtest producer: %v\n", err)
	}
}

func (s *producerStats) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		s.writeErrors.Add(1)
		s.addError(fmt.Errorf("write: %w", err))
		return
	}
	s.requests.Add(1)
	if key == 0 { // Produce
		s.produceRequests.Add(1)
	}
}

func (s *producerStats) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		s.readErrors.Add(1)
		s.addError(fmt.Errorf("read: %w", err))
	}
}

func (s *producerStats) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		s.connectErrors.Add(1)
		s.addError(fmt.Errorf("connect: %w", err))
	}
}

func (s *producerStats) OnBrokerDisconnect(kgo.BrokerMetadata, net.Conn) { s.disconnects.Add(1) }

// runProducer produces at job.Rate for job.Duration, then flushes. Broker
// and network errors are tolerated: kgo retries records (without a
// delivery timeout) until the flush times out.
func runProducer(job ProducerJob) (ProducerResult, error) {
	job = job.withDefaults()
	st := &producerStats{}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(job.Addr),
		kgo.ClientID(job.ClientID),
		kgo.DefaultProduceTopic(job.Topic),
		kgo.AllowAutoTopicCreation(),
		kgo.MetadataMinAge(100*time.Millisecond),
		// Reconnect quickly once the link is back.
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.DialTimeout(2*time.Second),
		kgo.WithHooks(st),
	)
	if err != nil {
		return ProducerResult{}, fmt.Errorf("producer: %w", err)
	}

	value := bytes.Repeat([]byte("v"), job.ValueBytes)
	if job.Incompressible {
		rand.Read(value)
	}
	res := ProducerResult{Start: time.Now()}
	seconds := int((job.Duration+job.FlushTimeout)/time.Second) + 2
	perSecond := make([]atomic.Int64, seconds)
	var acked atomic.Int64
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			st.addError(fmt.Errorf("record: %w", err))
			return
		}
		acked.Add(1)
		perSecond[min(int(time.Since(res.Start)/time.Second), seconds-1)].Add(1)
	}

	ctx := context.Background()
	interval := time.Second / time.Duration(job.Rate)
	end := res.Start.Add(job.Duration)
	for i := 0; ; i++ {
		due := res.Start.Add(time.Duration(i) * interval)
		if !due.Before(end) {
			break
		}
		time.Sleep(time.Until(due))
		rec := &kgo.Record{Key: fmt.Appendf(nil, "key-%d", i), Value: value}
		res.Produced++
		// Blocks only when kgo's buffer (10k records) is full.
		cl.Produce(ctx, rec, promise)
	}
	fctx, cancel := context.WithTimeout(ctx, job.FlushTimeout)
	defer cancel()
	if err := cl.Flush(fctx); err != nil {
		st.addError(fmt.Errorf("flush: %w", err))
	}
	cl.Close() // fails what is still outstanding

	res.Acked = acked.Load()
	res.Failed = res.Produced - res.Acked
	last := 0
	for i := range perSecond {
		if perSecond[i].Load() > 0 {
			last = i
		}
	}
	for i := 0; i <= last; i++ {
		res.AckedPerSecond = append(res.AckedPerSecond, perSecond[i].Load())
	}
	res.Requests, res.ProduceRequests = st.requests.Load(), st.produceRequests.Load()
	res.WriteErrors, res.ReadErrors = st.writeErrors.Load(), st.readErrors.Load()
	res.ConnectErrors, res.Disconnects = st.connectErrors.Load(), st.disconnects.Load()
	st.mu.Lock()
	res.Errors = append(res.Errors, st.errors...)
	st.mu.Unlock()
	return res, nil
}

// Producer is a running producer helper process.
type Producer struct {
	cmd    *exec.Cmd
	exited <-chan error
	stdout bytes.Buffer // complete once exited
	bound  time.Duration

	mu     sync.Mutex
	stderr strings.Builder
	done   chan struct{} // stderr read to EOF

	waitOnce sync.Once
	res      ProducerResult
	err      error
}

// NetnsProducer starts a franz-go producer in a helper process (see
// HelperTestName) inside ns (nil: in this network namespace) and returns
// at once; Wait returns its result. The process is killed when ctx ends,
// when the test ends, or when this process dies.
//
// Example, with a broker started with AdvertisedHost: ns.HostIP.String():
//
//	p := labtest.NetnsProducer(ctx, t, ns, labtest.ProducerJob{
//		Addr: net.JoinHostPort(ns.HostIP.String(), port), Topic: "chaos",
//		Rate: 200, Duration: 6 * time.Second})
//	... break the link with ns.SetHostLink(false) ...
//	res, err := p.Wait()
func NetnsProducer(ctx context.Context, t testing.TB, ns *Netns, job ProducerJob) *Producer {
	t.Helper()
	job = job.withDefaults()
	env, err := json.Marshal(helperJob{Produce: &job})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("labtest: producer: %v", err)
	}
	args := []string{"-test.run=^" + HelperTestName + "$", "-test.count=1"}
	var cmd *exec.Cmd
	if ns != nil {
		cmd = ns.Command(ctx, exe, args...)
	} else {
		cmd = exec.CommandContext(ctx, exe, args...)
	}
	cmd.Env = append(os.Environ(), helperEnv+"="+string(env))
	p := &Producer{cmd: cmd, done: make(chan struct{}), bound: job.Duration + job.FlushTimeout + 30*time.Second}
	cmd.Stdout = &p.stdout
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatalf("labtest: producer: %v", err)
	}
	cmd.Stderr = pw
	p.exited, err = lab.StartChild(cmd) // never outlives the test binary
	pw.Close()
	if err != nil {
		pr.Close()
		t.Fatalf("labtest: producer: %v", err)
	}
	go func() {
		defer close(p.done)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // no-op once it exited
		_, _ = p.Wait()
	})
	return p
}

// Stderr is the helper's stderr so far (its first errors, test framework
// output).
func (p *Producer) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Wait waits for the producer to exit (killing it if it overruns its
// duration and flush timeout by 30 s) and returns its result.
func (p *Producer) Wait() (ProducerResult, error) {
	p.waitOnce.Do(func() {
		var err error
		select {
		case err = <-p.exited:
		case <-time.After(p.bound):
			_ = p.cmd.Process.Kill()
			<-p.exited
			err = fmt.Errorf("did not exit within %v; killed", p.bound)
		}
		<-p.done
		out := strings.TrimSpace(p.stdout.String())
		line := out[strings.LastIndexByte(out, '\n')+1:]
		switch {
		case err != nil:
			p.err = fmt.Errorf("labtest: producer: %w\n%s", err, p.Stderr())
		case !strings.HasPrefix(line, "{"):
			p.err = fmt.Errorf("labtest: producer printed no result (does the test package define func %s(t *testing.T) { labtest.HelperProcess(t) }?): %q\n%s",
				HelperTestName, out, p.Stderr())
		default:
			if jerr := json.Unmarshal([]byte(line), &p.res); jerr != nil {
				p.err = fmt.Errorf("labtest: producer result %q: %w", line, jerr)
			}
		}
	})
	return p.res, p.err
}
