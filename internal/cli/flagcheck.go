package cli

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kscope-dev/kscope/internal/wire"
)

// Flags are untrusted input like any other: a value out of range must
// end the command before it does anything, not quietly filter out every
// row or fall back to a default. check gives a flag a rule that pflag
// applies when the flag is set, so a bad value fails the parsing of the
// command line with pflag's one-line error naming the flag and the value
// (exit 2, as every flag error). Defaults are the program's own and are
// not checked.

// checkedValue is a flag's own pflag.Value (its parsing, help and
// default) with a rule on the parsed value.
type checkedValue[T any] struct {
	pflag.Value
	p    *T
	rule func(T) error
}

func (v *checkedValue[T]) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		return err
	}
	return v.rule(*v.p)
}

// check puts rule on the flag name of f, whose variable is p.
func check[T any](f *pflag.FlagSet, name string, p *T, rule func(T) error) {
	fl := f.Lookup(name)
	if fl == nil {
		panic("check: no flag --" + name) // a typo in the wiring, caught by every test
	}
	fl.Value = &checkedValue[T]{Value: fl.Value, p: p, rule: rule}
}

// number is what the range rules compare (time.Duration is an int64).
type number interface {
	~int | ~int16 | ~int32 | ~int64 | ~uint | ~float64
}

// nonNegative refuses a value below 0 (and NaN).
func nonNegative[T number](v T) error {
	if !(v >= 0) {
		return errors.New("must not be negative")
	}
	return nil
}

// positive refuses 0, a value below it, and NaN.
func positive[T number](v T) error {
	if !(v > 0) {
		return errors.New("must be positive")
	}
	return nil
}

// atLeast refuses a value below least (and NaN).
func atLeast[T number](least T) func(T) error {
	return func(v T) error {
		if !(v >= least) {
			return fmt.Errorf("must be at least %v", least)
		}
		return nil
	}
}

// between refuses a value outside [lo, hi] (and NaN).
func between[T number](lo, hi T) func(T) error {
	return func(v T) error {
		if !(v >= lo && v <= hi) {
			return fmt.Errorf("want %v to %v", lo, hi)
		}
		return nil
	}
}

// percentile is a latency percentile: above 0 and below 100 (p100 is the
// maximum, not a percentile; NaN and the infinities are not numbers of
// requests).
func percentile(v float64) error {
	if !(v > 0 && v < 100) {
		return errors.New("want a percentile above 0 and below 100, such as 99 or 99.9")
	}
	return nil
}

// share is a part of a whole: above 0, at most 1.
func share(v float64) error {
	if !(v > 0 && v <= 1) {
		return errors.New("want a fraction above 0 and at most 1, such as 0.5")
	}
	return nil
}

// level is a significance level: above 0, below 1.
func level(v float64) error {
	if !(v > 0 && v < 1) {
		return errors.New("want a level above 0 and below 1, such as 0.05")
	}
	return nil
}

// oneOf refuses a word not among choices.
func oneOf(choices ...string) func(string) error {
	return func(s string) error {
		for _, c := range choices {
			if s == c {
				return nil
			}
		}
		return fmt.Errorf("want %s", orList(choices))
	}
}

// orList writes choices as "a, b or c".
func orList(choices []string) string {
	if len(choices) == 1 {
		return choices[0]
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}

// optional lets "" (a flag's way of saying none, or the default) pass
// rule.
func optional(rule func(string) error) func(string) error {
	return func(s string) error {
		if s == "" {
			return nil
		}
		return rule(s)
	}
}

// each applies rule to every element of a list flag.
func each[T any](rule func(T) error) func([]T) error {
	return func(list []T) error {
		for _, v := range list {
			if err := rule(v); err != nil {
				return err
			}
		}
		return nil
	}
}

// tcpPort is a port a broker listens on: 1 to 65535.
func tcpPort(p uint) error {
	if p < 1 || p > 65535 {
		return fmt.Errorf("%d is not a TCP port (1 to 65535)", p)
	}
	return nil
}

// portOrAny is a port to listen on, 0 meaning any free one.
func portOrAny(p int) error {
	if p < 0 || p > 65535 {
		return fmt.Errorf("%d is not a TCP port (0: any, else 1 to 65535)", p)
	}
	return nil
}

// notEmpty refuses an empty element of a list ("a,,b"), which would
// match nothing.
func notEmpty(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("an empty name")
	}
	return nil
}

// hostPort is HOST:PORT, or HOST alone, to which the Kafka client adds
// port 9092.
func hostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		host, port = s, "9092"
	}
	if strings.TrimSpace(host) == "" {
		return fmt.Errorf("%q: want HOST:PORT", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: %q is not a TCP port (1 to 65535)", s, port)
	}
	return nil
}

// listenAddr is an address to serve on: [HOST]:PORT, port 0 for any.
func listenAddr(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want [HOST]:PORT, such as 127.0.0.1:9464 or :9464")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q is not a TCP port (0: any, else 1 to 65535)", port)
	}
	return nil
}

// pidOr is a process id, or one of words (auto, none).
func pidOr(words ...string) func(string) error {
	return func(s string) error {
		for _, w := range words {
			if s == w {
				return nil
			}
		}
		if pid, err := strconv.Atoi(s); err != nil || pid <= 0 {
			return fmt.Errorf("want a process id or %s", orList(words))
		}
		return nil
	}
}

// knownAPI is an API kmsg knows, by name or key; a typo gets the
// closest name.
func knownAPI(s string) error {
	_, err := wire.ParseAPI(s)
	return err
}

// otlpEndpoint is an OTLP/HTTP endpoint: HOST:PORT, or an http(s) URL
// with a host ("" : none).
func otlpEndpoint(s string) error {
	if s == "" {
		return nil
	}
	if !strings.Contains(s, "://") {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return errors.New("want HOST:PORT or http(s)://HOST:PORT")
		}
		return hostPort(s)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want HOST:PORT or http(s)://HOST:PORT")
	}
	return nil
}
