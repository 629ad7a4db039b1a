package fsbench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/safefile"
)

// Variant is one file system set-up: how it is made and mounted.
type Variant struct {
	// Name is what --variants calls it.
	Name string `json:"name"`
	// FS is the file system type: "ext4" or "xfs".
	FS string `json:"fs"`
	// MkfsArgs are the arguments of mkfs.<FS> before the device.
	MkfsArgs []string `json:"mkfs_args"`
	// MountOptions are mount's -o options; empty for the defaults.
	MountOptions string `json:"mount_options,omitempty"`
}

// ext4Mkfs initialises the inode tables and the journal at mkfs time:
// otherwise the ext4lazyinit kernel thread zeroes them in the background
// for the first minutes after the mount, I/O that the XFS variants would
// not have.
var ext4Mkfs = []string{"-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"}

// Variants are the known variants, in the order Allegro tried them.
var Variants = []Variant{
	{Name: "ext4", FS: "ext4", MkfsArgs: ext4Mkfs},
	{Name: "ext4-writeback", FS: "ext4", MkfsArgs: ext4Mkfs, MountOptions: "data=writeback"},
	{Name: "ext4-fastcommit", FS: "ext4", MkfsArgs: append(append([]string(nil), ext4Mkfs...), "-O", "fast_commit")},
	{Name: "xfs", FS: "xfs", MkfsArgs: []string{"-q", "-f"}},
}

// DefaultVariants is --variants' default.
const DefaultVariants = "ext4,ext4-writeback,ext4-fastcommit,xfs"

// ParseVariants parses a comma-separated list of variants: names, each
// optionally with mount options ("ext4,ext4:commit=30,xfs:logbsize=256k").
func ParseVariants(spec string) ([]Variant, error) {
	var out []Variant
	seen := map[string]bool{}
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		c, err := parseVariant(name)
		if err != nil {
			return nil, err
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("variant %q given twice", c.Name)
		}
		seen[c.Name] = true
		out = append(out, c)
		if len(out) > maxVariants {
			return nil, fmt.Errorf("at most %d variants", maxVariants)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no variants")
	}
	return out, nil
}

// maxVariants bounds --variants: each is a broker run per trial.
const maxVariants = 16

// parseVariant parses one variant: a known name, optionally followed by
// mount options (knobs.go), "ext4:commit=30:noatime".
func parseVariant(spec string) (Variant, error) {
	name, opts, hasOpts := strings.Cut(spec, ":")
	var v *Variant
	for i := range Variants {
		if Variants[i].Name == name {
			v = &Variants[i]
		}
	}
	if v == nil {
		names := make([]string, len(Variants))
		for i, k := range Variants {
			names[i] = k.Name
		}
		return Variant{}, fmt.Errorf("unknown variant %q (known: %s; mount options after a colon, e.g. ext4:commit=30)", name, strings.Join(names, ", "))
	}
	c := *v
	c.MkfsArgs = slices.Clone(v.MkfsArgs)
	if !hasOpts {
		return c, nil
	}
	return c.withKnobs(opts)
}

// FileName is the variant's name as a file name part: the colons of its
// knobs become '+' ("ext4+commit=30").
func (v Variant) FileName() string { return strings.ReplaceAll(v.Name, ":", "+") }

// MkfsCommand is the command line that makes v on dev.
func (v Variant) MkfsCommand(dev string) []string {
	return append(append([]string{"mkfs." + v.FS}, v.MkfsArgs...), dev)
}

// MountCommand is the command line that mounts v from dev on dir.
func (v Variant) MountCommand(dev, dir string) []string {
	args := []string{"mount", "-t", v.FS}
	if v.MountOptions != "" {
		args = append(args, "-o", v.MountOptions)
	}
	return append(args, dev, dir)
}

// Stall is injected stalls: the file system is frozen (fsfreeze -f) for
// Duration every Period during the measured part of each run, first at
// half a Period into it.
type Stall struct {
	Duration time.Duration `json:"duration_ns"`
	Period   time.Duration `json:"period_ns"`
}

// ParseStall parses "fsfreeze:300ms@every10s". Empty or "none": none.
func ParseStall(spec string) (*Stall, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "none" {
		return nil, nil
	}
	bad := fmt.Errorf("--stall %q: want fsfreeze:DURATION@everyPERIOD, e.g. fsfreeze:300ms@every10s", spec)
	rest, ok := strings.CutPrefix(spec, "fsfreeze:")
	if !ok {
		return nil, bad
	}
	d, p, ok := strings.Cut(rest, "@every")
	if !ok {
		return nil, bad
	}
	dur, err1 := time.ParseDuration(d)
	per, err2 := time.ParseDuration(p)
	if err1 != nil || err2 != nil || dur <= 0 || per <= dur || dur > time.Minute {
		return nil, fmt.Errorf("%w (0 < DURATION <= 1m, PERIOD > DURATION)", bad)
	}
	return &Stall{Duration: dur, Period: per}, nil
}

func (s *Stall) String() string {
	return fmt.Sprintf("fsfreeze:%v@every%v", s.Duration, s.Period)
}

// ParseSize parses a byte count: "262144", "256KiB", "3GiB", "512MiB"
// (K, M, G are taken as binary too).
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(num), u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q: want bytes, e.g. 3GiB or 262144", s)
	}
	return n * mult, nil
}

// Workload is the load of every run: the fields of a --workload JSON file,
// which map to bench.Config. Durations are strings ("20s").
type Workload struct {
	Rate        float64  `json:"rate"`         // messages per second over all producers
	Producers   int      `json:"producers"`    // producing clients
	MessageSize string   `json:"message_size"` // bytes, "N" or "uniform:MIN-MAX"
	Duration    Duration `json:"duration"`     // measured part
	Warmup      Duration `json:"warmup"`       // before it, not timed
	Acks        string   `json:"acks"`         // all, 1, 0
	Linger      Duration `json:"linger"`
	Partitions  int32    `json:"partitions"` // of the topic
	Compression string   `json:"compression"`
	BatchBytes  int      `json:"batch_bytes"`
	MaxInFlight int      `json:"max_in_flight"`
	// Idempotent defaults to true with acks=all, as in kscope bench run.
	Idempotent *bool  `json:"idempotent,omitempty"`
	Keys       string `json:"keys"`
	Topic      string `json:"topic"`
}

// DefaultWorkload is the load without --workload: 2000 msg/s of 1 KiB from
// two idempotent producers, acks=all, linger 5 ms, 4 partitions, 5 s of
// warm-up and 20 s measured.
func DefaultWorkload() Workload {
	return Workload{
		Rate: 2000, Producers: 2, MessageSize: "1024",
		Duration: Duration(20 * time.Second), Warmup: Duration(5 * time.Second),
		Acks: "all", Linger: Duration(5 * time.Millisecond), Partitions: 4,
		Compression: "none", Keys: "none", Topic: "kscope-labfs",
	}
}

// maxWorkloadFile bounds a workload file: a few hundred bytes of JSON.
const maxWorkloadFile = 1 << 20

// LoadWorkload reads a workload file: the fields it gives override
// DefaultWorkload's; unknown fields are an error. A pipe works (--workload
// <(...)); a device, a directory or a file over maxWorkloadFile is refused
// (/dev/zero would otherwise be read until memory runs out).
func LoadWorkload(path string) (Workload, error) {
	data, err := safefile.ReadAll(path, maxWorkloadFile)
	if err != nil {
		return DefaultWorkload(), fmt.Errorf("workload: %w", err)
	}
	w, err := parseWorkload(data)
	if err != nil {
		return w, fmt.Errorf("workload %s: %w", path, err)
	}
	return w, nil
}

// parseWorkload decodes a workload file's bytes over DefaultWorkload and
// checks the shape of the load they describe.
func parseWorkload(data []byte) (Workload, error) {
	w := DefaultWorkload()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return w, err
	}
	if _, err := w.BenchConfig("127.0.0.1:9092"); err != nil {
		return w, err
	}
	return w, nil
}

// BenchConfig is the bench.Config of one run against bootstrap. Only the
// shape is checked here; bench.Run validates the rest.
func (w Workload) BenchConfig(bootstrap string) (bench.Config, error) {
	if !(w.Rate > 0) {
		return bench.Config{}, errors.New("rate must be a positive number of messages per second")
	}
	if w.Producers < 1 {
		return bench.Config{}, errors.New("producers must be at least 1")
	}
	if w.Duration <= 0 {
		return bench.Config{}, errors.New("duration must be positive")
	}
	if w.Warmup < 0 || w.Linger < 0 {
		return bench.Config{}, errors.New("warmup and linger must not be negative")
	}
	if w.Partitions < 1 {
		return bench.Config{}, errors.New("partitions must be at least 1")
	}
	if w.Topic == "" {
		w.Topic = "kscope-labfs"
	}
	idem := w.Acks == "all" || w.Acks == "-1" || w.Acks == ""
	if w.Idempotent != nil {
		idem = *w.Idempotent
	}
	return bench.Config{
		Bootstrap:         []string{bootstrap},
		Topics:            []string{w.Topic},
		Partitions:        w.Partitions,
		ReplicationFactor: 1,
		Producers:         w.Producers,
		Rate:              w.Rate,
		Duration:          time.Duration(w.Duration),
		Warmup:            time.Duration(w.Warmup),
		MessageSize:       w.MessageSize,
		Keys:              w.Keys,
		Acks:              w.Acks,
		Compression:       w.Compression,
		Linger:            time.Duration(w.Linger),
		BatchBytes:        w.BatchBytes,
		MaxInFlight:       w.MaxInFlight,
		Idempotent:        idem,
	}, nil
}

// Duration is a time.Duration written as a string ("20s") in JSON.
type Duration time.Duration

// MarshalJSON writes "20s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "20s" (or a number of nanoseconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("duration %s: want a string like \"20s\"", b)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
