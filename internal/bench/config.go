package bench

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kscope-dev/kscope/internal/cluster"
)

// Config is one `kscope bench run`: the workload, the client settings and
// the bounds of the run. Zero values mean the defaults noted per field.
type Config struct {
	Bootstrap []string
	// Topics are created when missing, with Partitions (0: the broker's
	// default) and ReplicationFactor (0: the broker's default).
	Topics            []string
	Partitions        int32
	ReplicationFactor int16

	// Producers is the number of producing clients (separate kgo
	// clients), at least 1. Consumers is the number of members of one
	// consumer group; 0 turns off end-to-end latency and the loss and
	// duplicate accounting.
	Producers int
	Consumers int

	// Rate is the offered load in messages per second over all
	// producers, on a fixed open-loop schedule; or RateMax: as fast as
	// the clients accept messages.
	Rate    float64
	RateMax bool
	// Sync: each producer sends one message and waits for its
	// acknowledgement before the next.
	Sync bool

	// Warmup messages are sent and accounted but not timed; Duration is
	// the measured part after it.
	Duration time.Duration
	Warmup   time.Duration

	// MessageSize is "N" (bytes) or "uniform:MIN-MAX" (default "1024").
	MessageSize string
	// Keys is none (default), round-robin, uniform or hot:F (a fraction F
	// of the messages get one key, the rest spread uniformly), over
	// KeySpace distinct keys (default 1024).
	Keys     string
	KeySpace int
	// Compressibility is the fraction of each payload that is not random
	// (0: incompressible).
	Compressibility float64
	// Headers is the number of extra record headers, besides the two
	// kscope needs (message id and send timestamp).
	Headers int

	// Client settings. Acks: all (default), 1, 0. Compression: none
	// (default), gzip, snappy, lz4, zstd. Linger: how long a batch may
	// wait for more records. BatchBytes: the maximum batch size (0:
	// franz-go's 1000012). MaxInFlight: produce requests in flight per
	// broker (0: 5; franz-go caps idempotent producers at 5).
	// Idempotent requires acks=all.
	Acks        string
	Compression string
	Linger      time.Duration
	BatchBytes  int
	MaxInFlight int
	Idempotent  bool

	// ConnectTimeout bounds reaching the cluster and preparing topics and
	// the consumer group (default 15 s). DrainTimeout bounds waiting, at
	// the end, for outstanding acknowledgements and for the consumers to
	// see every acknowledged message (default 30 s).
	ConnectTimeout time.Duration
	DrainTimeout   time.Duration

	// Progress receives one line per second (nil: none).
	Progress io.Writer
	// OnStart, when set, is called once the load is about to begin, with
	// the first due time and the start of the measured part (for tests
	// and scripts that inject faults at known moments).
	OnStart func(first, measureStart time.Time)
}

// InputError is a problem with what the run was asked to do: bad flags,
// an unreachable cluster, a topic that cannot be created. The CLI exits
// with code 2 for it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}

// Limits on what a run may ask for.
const (
	maxMessageSize = 8 << 20
	maxHeaders     = 1000
	maxProducers   = 1024
	maxKeySpace    = 1 << 24
)

// settings is a validated Config in the forms the engine uses.
type settings struct {
	Config
	size   sizeDist
	keys   keyDist
	acks   kgo.Acks
	codec  kgo.CompressionCodec
	timed  bool // the run has a fixed rate
	ackSet bool // acks != 0: produce requests are answered
}

// validate checks cfg, fills defaults and parses the specs, one part of
// the config after the other in the order of the rules below; the first
// problem found is the error.
func (cfg Config) validate() (settings, error) {
	s := settings{Config: cfg}
	for _, rule := range []func(*settings) error{
		(*settings).checkTarget,
		(*settings).checkLoad,
		(*settings).checkMessages,
		(*settings).checkClient,
		(*settings).checkBounds,
	} {
		if err := rule(&s); err != nil {
			return s, err
		}
	}
	return s, nil
}

// checkTarget checks where the load goes: the bootstrap servers and the
// topics (valid Kafka names, each once) and how they are created.
func (s *settings) checkTarget() error {
	c := &s.Config
	if len(c.Bootstrap) == 0 {
		return inputErr("no bootstrap servers (--bootstrap HOST:PORT)")
	}
	if len(c.Topics) == 0 {
		return inputErr("no topic (--topic NAME)")
	}
	seen := map[string]bool{}
	for _, t := range c.Topics {
		if t == "" || len(t) > 249 || strings.Trim(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" || t == "." || t == ".." {
			return inputErr("invalid topic name %q (letters, digits, '.', '_', '-'; at most 249)", t)
		}
		if seen[t] {
			return inputErr("topic %q given twice", t)
		}
		seen[t] = true
	}
	if c.Partitions < 0 {
		return inputErr("--partitions must be positive (0: the broker's default)")
	}
	if c.ReplicationFactor < 0 {
		return inputErr("--replication-factor must be positive (0: the broker's default)")
	}
	return nil
}

// checkLoad checks the shape of the load: the clients, the rate (fixed
// or max) and how long it runs.
func (s *settings) checkLoad() error {
	c := &s.Config
	if c.Producers < 1 || c.Producers > maxProducers {
		return inputErr("--producers must be 1..%d, not %d", maxProducers, c.Producers)
	}
	if c.Consumers < 0 || c.Consumers > maxProducers {
		return inputErr("--consumers must be 0..%d, not %d", maxProducers, c.Consumers)
	}
	switch {
	case c.RateMax && c.Rate != 0:
		return inputErr("give either a rate or max, not both")
	case !c.RateMax && !(c.Rate > 0):
		return inputErr("--rate must be a positive number of messages per second or max")
	case c.Rate > 1e8:
		return inputErr("--rate %g is beyond what one process can send", c.Rate)
	}
	s.timed = !c.RateMax
	if c.Duration <= 0 {
		return inputErr("--duration must be positive")
	}
	if c.Warmup < 0 {
		return inputErr("--warmup must not be negative")
	}
	return nil
}

// checkMessages checks and parses what each message is made of: its
// size, its key, how compressible it is and its headers.
func (s *settings) checkMessages() error {
	c := &s.Config
	var err error
	if c.MessageSize == "" {
		c.MessageSize = "1024"
	}
	if s.size, err = parseSize(c.MessageSize); err != nil {
		return &InputError{Err: err}
	}
	if c.Keys == "" {
		c.Keys = "none"
	}
	if c.KeySpace == 0 {
		c.KeySpace = 1024
	}
	if c.KeySpace < 1 || c.KeySpace > maxKeySpace {
		return inputErr("--key-space must be 1..%d", maxKeySpace)
	}
	if s.keys, err = parseKeys(c.Keys, c.KeySpace); err != nil {
		return &InputError{Err: err}
	}
	if !(c.Compressibility >= 0 && c.Compressibility <= 1) {
		return inputErr("--compressibility must be between 0 and 1, not %g", c.Compressibility)
	}
	if c.Headers < 0 || c.Headers > maxHeaders {
		return inputErr("--headers must be 0..%d", maxHeaders)
	}
	return nil
}

// checkClient checks the producer client's settings (acks, compression,
// batching, requests in flight) and that they go together.
func (s *settings) checkClient() error {
	c := &s.Config
	if c.Acks == "" {
		c.Acks = "all"
	}
	switch c.Acks {
	case "all", "-1":
		c.Acks, s.acks = "all", kgo.AllISRAcks()
	case "1":
		s.acks = kgo.LeaderAck()
	case "0":
		s.acks = kgo.NoAck()
	default:
		return inputErr("--acks must be all, 1 or 0, not %q", c.Acks)
	}
	s.ackSet = c.Acks != "0"
	if c.Compression == "" {
		c.Compression = "none"
	}
	var err error
	if s.codec, err = parseCodec(c.Compression); err != nil {
		return &InputError{Err: err}
	}
	if c.Linger < 0 {
		return inputErr("--linger must not be negative")
	}
	if c.BatchBytes == 0 {
		c.BatchBytes = 1000012
	}
	if c.BatchBytes < 1024 || c.BatchBytes > 1<<30 {
		return inputErr("--batch-bytes must be 1024..%d", 1<<30)
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 5
	}
	if c.MaxInFlight < 1 {
		return inputErr("--max-in-flight must be at least 1")
	}
	if c.Idempotent && c.Acks != "all" {
		return inputErr("--idempotent needs --acks all (give --idempotent=false with --acks %s)", c.Acks)
	}
	if c.Idempotent && c.MaxInFlight > 5 {
		return inputErr("--idempotent allows at most 5 requests in flight, not %d", c.MaxInFlight)
	}
	return nil
}

// checkBounds checks the run's time bounds and defaults where its
// progress lines go.
func (s *settings) checkBounds() error {
	c := &s.Config
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 15 * time.Second
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 30 * time.Second
	}
	if c.ConnectTimeout < 0 || c.DrainTimeout < 0 {
		return inputErr("timeouts must not be negative")
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return nil
}

// sizeDist is a message size distribution: uniform over [min, max]
// (min == max: fixed).
type sizeDist struct{ min, max int }

// parseSize parses "N" or "uniform:MIN-MAX" (bytes).
func parseSize(spec string) (sizeDist, error) {
	bad := func() (sizeDist, error) {
		return sizeDist{}, fmt.Errorf("--message-size %q: want N or uniform:MIN-MAX (bytes, at most %d)", spec, maxMessageSize)
	}
	if rest, ok := strings.CutPrefix(spec, "uniform:"); ok {
		a, b, ok := strings.Cut(rest, "-")
		if !ok {
			return bad()
		}
		lo, err1 := strconv.Atoi(a)
		hi, err2 := strconv.Atoi(b)
		if err1 != nil || err2 != nil || lo < 0 || hi < lo || hi > maxMessageSize {
			return bad()
		}
		return sizeDist{lo, hi}, nil
	}
	n, err := strconv.Atoi(spec)
	if err != nil || n < 0 || n > maxMessageSize {
		return bad()
	}
	return sizeDist{n, n}, nil
}

// keyMode is how keys are chosen.
type keyMode int

const (
	keysNone keyMode = iota
	keysRoundRobin
	keysUniform
	keysHot
)

type keyDist struct {
	mode keyMode
	n    int     // distinct keys
	hot  float64 // keysHot: the fraction of messages with the hot key
}

// parseKeys parses none, round-robin, uniform and hot:F.
func parseKeys(spec string, n int) (keyDist, error) {
	switch spec {
	case "none":
		return keyDist{mode: keysNone}, nil
	case "round-robin":
		return keyDist{mode: keysRoundRobin, n: n}, nil
	case "uniform":
		return keyDist{mode: keysUniform, n: n}, nil
	}
	if rest, ok := strings.CutPrefix(spec, "hot:"); ok {
		f, err := strconv.ParseFloat(rest, 64)
		if err == nil && f > 0 && f <= 1 {
			return keyDist{mode: keysHot, n: n, hot: f}, nil
		}
	}
	return keyDist{}, errors.New("--keys " + strconv.Quote(spec) + ": want none, round-robin, uniform or hot:F (0 < F <= 1)")
}

func parseCodec(name string) (kgo.CompressionCodec, error) {
	c, err := cluster.Codec(name)
	if err != nil {
		return c, fmt.Errorf("--%w", err)
	}
	return c, nil
}
