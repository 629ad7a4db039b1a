package clientzoo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Env is where and with what the zoo runs.
type Env struct {
	Bootstrap string // host:port[,host:port...]
	// BrokerVersion is the broker's release; clients whose MinBroker is
	// later are skipped. Empty: none is skipped.
	BrokerVersion string
	Tools         *Tools
	// Parallel is how many clients run at once (0: DefaultParallel).
	Parallel int
}

// DefaultParallel: the zoo's JVMs and Python interpreters share two
// cores with the broker; more at once only slows each down.
const DefaultParallel = 4

// Result is what one client did.
type Result struct {
	Client     Client
	Start, End time.Time
	Produced   int // records acknowledged
	Consumed   int
	Requests   int // storms: connections made or Metadata requests sent
	// Skipped says why the client did not run ("" when it ran).
	Skipped string
	Err     error
	// Output is the tail of the client's output (subprocess clients).
	Output string
}

// Run creates the clients' topics, then runs every client, Parallel at a
// time, and returns their results in the clients' order. A client's
// failure is its Result.Err: clients that the broker rejects (old
// versions against Kafka 4) are expected to fail. The error is for what
// stops the whole zoo: invalid clients, or topics not created.
func Run(ctx context.Context, env Env, clients []Client) ([]Result, error) {
	var errs []error
	for _, c := range clients {
		errs = append(errs, c.Validate())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := CreateTopics(ctx, env.Bootstrap, clients); err != nil {
		return nil, err
	}
	parallel := env.Parallel
	if parallel <= 0 {
		parallel = DefaultParallel
	}
	results := make([]Result, len(clients))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = RunClient(ctx, env, c)
		})
	}
	wg.Wait()
	return results, nil
}

// RunClient runs one client to its end, its Timeout or ctx's end,
// whichever comes first. The topic must exist (CreateTopics).
func RunClient(ctx context.Context, env Env, c Client) (r Result) {
	r = Result{Client: c, Start: time.Now()}
	defer func() { r.End = time.Now() }()
	if c.MinBroker != "" && env.BrokerVersion != "" && !atLeast(env.BrokerVersion, c.MinBroker) {
		r.Skipped = fmt.Sprintf("needs Kafka %s or later, the broker is %s", c.MinBroker, env.BrokerVersion)
		return r
	}
	if err := c.Validate(); err != nil {
		r.Err = err
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	var err error
	switch c.Library {
	case Java:
		err = runJava(ctx, env, c, &r)
	case Librdkafka, KafkaPython:
		err = runPython(ctx, env, c, &r)
	case FranzGo:
		err = runFranz(ctx, env, c, &r)
	case Sarama:
		err = runSarama(ctx, env, c, &r)
	case Storm:
		err = runStorm(ctx, env, c, &r)
	default:
		err = fmt.Errorf("unknown library %q", c.Library)
	}
	if err != nil {
		r.Err = fmt.Errorf("clientzoo: %s (%s): %w", c.ClientID, c.Kind, err)
	}
	return r
}

// outputLimit bounds what is kept of a subprocess client's output: its
// tail, where the reason of a failure is.
const outputLimit = 64 << 10

// tailBuffer keeps the last outputLimit bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - outputLimit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// resultLine is what a subprocess client prints last, after "zoo-result ".
type resultLine struct {
	Produced int    `json:"produced"`
	Consumed int    `json:"consumed"`
	Error    string `json:"error"`
}

const resultPrefix = "zoo-result "

// runSubprocess runs cmd (built with exec.CommandContext from ctx) and
// adds up the zoo-result lines it prints into r. A client that exits
// non-zero, prints no result line, or reports an error fails.
func runSubprocess(ctx context.Context, cmd *exec.Cmd, r *Result) error {
	out := &tailBuffer{}
	results := &resultWriter{tail: out}
	cmd.Stdout, cmd.Stderr = results, out
	// A client that ignores its own deadline is killed at ctx's end; its
	// children, if any, must not hold the pipes open after that.
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	r.Output = out.String()
	var errs []string
	for _, line := range results.lines {
		var res resultLine
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			return fmt.Errorf("result line %q: %w", line, err)
		}
		r.Produced += res.Produced
		r.Consumed += res.Consumed
		if res.Error != "" {
			errs = append(errs, res.Error)
		}
	}
	switch {
	case len(errs) > 0:
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	case runErr != nil && ctx.Err() != nil:
		return fmt.Errorf("%w (%v)", ctx.Err(), runErr)
	case runErr != nil:
		return runErr
	case len(results.lines) == 0:
		return errors.New("no result line in its output")
	}
	return nil
}

// resultWriter picks the zoo-result lines out of a client's stdout and
// passes everything on to tail. Lines are cut at maxLine bytes and at
// most maxResults result lines are kept: a client's output is not
// trusted to be small.
type resultWriter struct {
	tail    *tailBuffer
	partial []byte
	lines   []string
}

const (
	maxLine    = 64 << 10
	maxResults = 16
)

func (w *resultWriter) Write(p []byte) (int, error) {
	w.tail.Write(p)
	for rest := p; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			w.partial = append(w.partial, rest[:min(len(rest), maxLine-len(w.partial))]...)
			break
		}
		w.partial = append(w.partial, rest[:min(i, maxLine-len(w.partial))]...)
		line, ok := strings.CutPrefix(string(w.partial), resultPrefix)
		if ok && len(w.lines) < maxResults {
			w.lines = append(w.lines, line)
		}
		w.partial, rest = w.partial[:0], rest[i+1:]
	}
	return len(p), nil
}
