package model

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// kind is how an input's values are written.
type kind int

const (
	kindCount    kind = iota // a number, SI prefixes allowed (1.5M)
	kindInt                  // a whole number
	kindBytes                // bytes: 2TiB, 50MB/s
	kindBits                 // bits/s: 10Gbit
	kindDuration             // 7d, 5ms
	kindString
)

// field is one input, by the name its flag and what-if changes use.
type field struct {
	name string
	kind kind
	num  func(*Inputs) *float64
	i    func(*Inputs) *int
	i16  func(*Inputs) *int16
	dur  func(*Inputs) *time.Duration
	str  func(*Inputs) *string
}

var fields = []field{
	{name: "rate", kind: kindCount, num: func(in *Inputs) *float64 { return &in.Rate }},
	{name: "message-size", kind: kindBytes, num: func(in *Inputs) *float64 { return &in.MessageSize }},
	{name: "key-size", kind: kindBytes, num: func(in *Inputs) *float64 { return &in.KeySize }},
	{name: "headers", kind: kindCount, num: func(in *Inputs) *float64 { return &in.Headers }},
	{name: "header-size", kind: kindBytes, num: func(in *Inputs) *float64 { return &in.HeaderSize }},
	{name: "records-per-batch", kind: kindCount, num: func(in *Inputs) *float64 { return &in.RecordsPerBatch }},
	{name: "batch-bytes", kind: kindBytes, num: func(in *Inputs) *float64 { return &in.BatchBytes }},
	{name: "linger", kind: kindDuration, dur: func(in *Inputs) *time.Duration { return &in.Linger }},
	{name: "partitions", kind: kindInt, i: func(in *Inputs) *int { return &in.Partitions }},
	{name: "producers", kind: kindInt, i: func(in *Inputs) *int { return &in.Producers }},
	{name: "batch-span", kind: kindDuration, dur: func(in *Inputs) *time.Duration { return &in.BatchSpan }},
	{name: "batches-per-request", kind: kindCount, num: func(in *Inputs) *float64 { return &in.BatchesPerRequest }},
	{name: "fetch-batches", kind: kindCount, num: func(in *Inputs) *float64 { return &in.FetchBatches }},
	{name: "compression-ratio", kind: kindCount, num: func(in *Inputs) *float64 { return &in.CompressionRatio }},
	{name: "replication-factor", kind: kindInt, i: func(in *Inputs) *int { return &in.ReplicationFactor }},
	{name: "consumer-groups", kind: kindCount, num: func(in *Inputs) *float64 { return &in.ConsumerGroups }},
	{name: "brokers", kind: kindInt, i: func(in *Inputs) *int { return &in.Brokers }},
	{name: "nic", kind: kindBits, num: func(in *Inputs) *float64 { return &in.NIC }},
	{name: "mtu", kind: kindInt, i: func(in *Inputs) *int { return &in.MTU }},
	{name: "disk-bw", kind: kindBytes, num: func(in *Inputs) *float64 { return &in.DiskBandwidth }},
	{name: "retention", kind: kindDuration, dur: func(in *Inputs) *time.Duration { return &in.Retention }},
	{name: "data-per-broker", kind: kindBytes, num: func(in *Inputs) *float64 { return &in.DataPerBroker }},
	{name: "throttle", kind: kindBytes, num: func(in *Inputs) *float64 { return &in.Throttle }},
	{name: "recovery", kind: kindString, str: func(in *Inputs) *string { return &in.Recovery }},
	{name: "kafka-version", kind: kindString, str: func(in *Inputs) *string { return &in.KafkaVersion }},
	{name: "record-format", kind: kindInt, i: func(in *Inputs) *int { return &in.RecordFormat }},
	{name: "produce-version", kind: kindInt, i16: func(in *Inputs) *int16 { return &in.ProduceVersion }},
	{name: "fetch-version", kind: kindInt, i16: func(in *Inputs) *int16 { return &in.FetchVersion }},
	{name: "client-id-len", kind: kindInt, i: func(in *Inputs) *int { return &in.ClientIDLen }},
	{name: "topic-name-len", kind: kindInt, i: func(in *Inputs) *int { return &in.TopicNameLen }},
}

// InputNames lists the inputs' names, as Set and WhatIf take them.
func InputNames() []string {
	var out []string
	for _, f := range fields {
		out = append(out, f.name)
	}
	return out
}

func lookup(name string) (field, error) {
	for _, f := range fields {
		if f.name == name {
			return f, nil
		}
	}
	return field{}, fmt.Errorf("unknown input %q (want one of %s)", name, strings.Join(InputNames(), ", "))
}

// parse reads a value of the field's kind as a float64 (durations in
// nanoseconds).
func (f field) parse(s string) (float64, error) {
	switch f.kind {
	case kindBytes:
		return ParseBytes(s)
	case kindBits:
		return ParseBits(s)
	case kindDuration:
		d, err := ParseDuration(s)
		return float64(d), err
	case kindInt:
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number", s)
		}
		return v, nil
	}
	return ParseCount(s)
}

func (f field) get(in *Inputs) float64 {
	switch {
	case f.num != nil:
		return *f.num(in)
	case f.i != nil:
		return float64(*f.i(in))
	case f.i16 != nil:
		return float64(*f.i16(in))
	case f.dur != nil:
		return float64(*f.dur(in))
	}
	return 0
}

func (f field) set(in *Inputs, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%s: %g is not a usable value", f.name, v)
	}
	switch {
	case f.num != nil:
		*f.num(in) = v
	case f.dur != nil:
		if math.Abs(v) > math.MaxInt64 {
			return fmt.Errorf("%s: duration out of range", f.name)
		}
		*f.dur(in) = time.Duration(v)
	default:
		if v != math.Trunc(v) {
			return fmt.Errorf("%s: %g is not a whole number", f.name, v)
		}
		if f.i16 != nil {
			if v < -1 || v > math.MaxInt16 {
				return fmt.Errorf("%s: %g is out of range", f.name, v)
			}
			*f.i16(in) = int16(v)
			return nil
		}
		if math.Abs(v) > math.MaxInt32 {
			return fmt.Errorf("%s: %g is out of range", f.name, v)
		}
		*f.i(in) = int(v)
	}
	return nil
}

// Set sets the input called name (a flag name: "message-size", "nic",
// "retention") from its written form ("1KiB", "10Gbit", "7d").
func Set(in *Inputs, name, value string) error {
	f, err := lookup(name)
	if err != nil {
		return err
	}
	if f.kind == kindString {
		*f.str(in) = strings.TrimSpace(value)
		return nil
	}
	v, err := f.parse(value)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return f.set(in, v)
}

// Apply makes one what-if change, written NAME=VALUE: VALUE is the new
// value, "+X" or "-X" to add or take X (in the input's units:
// message-size=+8, retention=+1d), "+P%" or "-P%" to change it by P
// percent, "xF" or "*F" to multiply it by F (rate=x2).
//
// Changing brokers keeps the cluster's data, so an explicit DataPerBroker
// scales by old/new brokers. Changing kafka-version drops explicit record
// format and API versions, which then follow the new version.
func Apply(in Inputs, change string) (Inputs, error) {
	name, value, ok := strings.Cut(change, "=")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok || name == "" || value == "" {
		return in, fmt.Errorf("what-if %q: want NAME=VALUE, like message-size=+8 or brokers=9", change)
	}
	f, err := lookup(name)
	if err != nil {
		return in, fmt.Errorf("what-if %q: %w", change, err)
	}
	oldBrokers := in.Brokers
	if f.kind == kindString {
		*f.str(&in) = value
	} else {
		old := f.get(&in)
		var v float64
		relative := true
		switch {
		case strings.HasSuffix(value, "%") && (value[0] == '+' || value[0] == '-'):
			p, perr := strconv.ParseFloat(strings.TrimSuffix(value, "%"), 64)
			if perr != nil {
				return in, fmt.Errorf("what-if %q: %q is not a percentage", change, value)
			}
			v = old * (1 + p/100)
		case value[0] == 'x' || value[0] == '*':
			m, perr := strconv.ParseFloat(value[1:], 64)
			if perr != nil {
				return in, fmt.Errorf("what-if %q: %q is not a factor", change, value)
			}
			v = old * m
		case value[0] == '+' || value[0] == '-':
			d, perr := f.parse(value[1:])
			if perr != nil {
				return in, fmt.Errorf("what-if %q: %w", change, perr)
			}
			if value[0] == '-' {
				d = -d
			}
			v = old + d
		default:
			relative = false
			if v, err = f.parse(value); err != nil {
				return in, fmt.Errorf("what-if %q: %w", change, err)
			}
		}
		if f.kind == kindInt && relative {
			v = math.Round(v) // brokers=x1.5 from 5 is 8
		}
		if err := f.set(&in, v); err != nil {
			return in, fmt.Errorf("what-if %q: %w", change, err)
		}
	}
	switch name {
	case "brokers":
		if in.DataPerBroker > 0 && in.Brokers > 0 {
			in.DataPerBroker *= float64(oldBrokers) / float64(in.Brokers)
		}
	case "kafka-version":
		in.RecordFormat, in.ProduceVersion, in.FetchVersion = -1, -1, -1
	}
	return in, nil
}

// Metric is one output figure, for tables and differences.
type Metric struct {
	Key   string  `json:"key"`
	Name  string  `json:"name"`
	Unit  string  `json:"unit"` // bits/s, bytes/s, bytes, s, msg/s, ratio, count
	Value float64 `json:"value"`
}

// Metrics lists the outputs in the order a table shows them.
func (o Outputs) Metrics() []Metric {
	rec := o.Recovery.Seconds
	return []Metric{
		{"records_per_batch", "records per batch", "count", o.RecordsPerBatch},
		{"record_bytes", "record, uncompressed", "bytes", o.RecordBytes},
		{"batch_bytes", "batch as sent and stored", "bytes", o.BatchBytes},
		{"stored_bytes_per_message", "stored per message", "bytes", o.StoredBytesPerMessage},
		{"produce_request_bytes", "produce request", "bytes", o.ProduceRequestBytes},
		{"produce_bytes_per_message", "produce bytes per message (wire)", "bytes", o.ProduceBytesPerMessage},
		{"fetch_bytes_per_message", "fetch bytes per message (wire)", "bytes", o.FetchBytesPerMessage},
		{"cluster_produce", "cluster: produce into leaders", "bits/s", o.ClusterProduce},
		{"cluster_replication", "cluster: replication to followers", "bits/s", o.ClusterReplication},
		{"cluster_consume", "cluster: consumer fetches", "bits/s", o.ClusterConsume},
		{"cluster_in", "cluster: into brokers", "bits/s", o.ClusterIn},
		{"cluster_out", "cluster: out of brokers", "bits/s", o.ClusterOut},
		{"broker_in", "per broker: network in", "bits/s", o.BrokerIn},
		{"broker_out", "per broker: network out", "bits/s", o.BrokerOut},
		{"nic_share_in", "per broker: NIC share in", "ratio", o.NICShareIn},
		{"nic_share_out", "per broker: NIC share out", "ratio", o.NICShareOut},
		{"headroom", "per broker: NIC headroom", "bits/s", o.Headroom},
		{"max_rate", "rate that fills the NIC", "msg/s", o.MaxRate},
		{"disk_write", "per broker: disk writes", "bytes/s", o.DiskWrite},
		{"disk_share", "per broker: disk share", "ratio", o.DiskShare},
		{"data_per_broker", "data per broker", "bytes", o.DataPerBroker},
		{"recovery_per_receiver", "re-replication: per receiving broker", "bytes", o.Recovery.PerReceiver},
		{"recovery_rate", "re-replication: copy rate, all receivers", "bytes/s", o.Recovery.Rate},
		{"recovery_seconds", "re-replication: time", "s", rec},
	}
}

// Delta is one output's value before and after a what-if and the change.
type Delta struct {
	Metric
	WhatIf float64 `json:"what_if"`
	Change float64 `json:"change"`
	// Relative is Change over the base value; 0 when that is 0.
	Relative float64 `json:"relative"`
}

// WhatIfResult is a base and a changed model.
type WhatIfResult struct {
	Changes      []string `json:"changes"`
	Base         Inputs   `json:"base_inputs"`
	Changed      Inputs   `json:"what_if_inputs"`
	BaseOutputs  Outputs  `json:"base"`
	WhatIfOutput Outputs  `json:"what_if"`
	Diff         []Delta  `json:"diff"`
}

// WhatIf computes the model for in and for in with the changes applied
// (all of them together, in order), and the differences.
func WhatIf(in Inputs, changes ...string) (WhatIfResult, error) {
	res := WhatIfResult{Changes: slices.Clone(changes), Base: in}
	if len(changes) == 0 {
		return res, errors.New("what-if: no change given")
	}
	var err error
	if res.BaseOutputs, err = Compute(in); err != nil {
		return res, err
	}
	changed := in
	for _, c := range changes {
		if changed, err = Apply(changed, c); err != nil {
			return res, err
		}
	}
	res.Changed = changed
	if res.WhatIfOutput, err = Compute(changed); err != nil {
		return res, fmt.Errorf("what-if %s: %w", strings.Join(changes, ", "), err)
	}
	res.Diff = Diff(res.BaseOutputs, res.WhatIfOutput)
	return res, nil
}

// Diff pairs the metrics of a and b.
func Diff(a, b Outputs) []Delta {
	am, bm := a.Metrics(), b.Metrics()
	out := make([]Delta, len(am))
	for i := range am {
		d := Delta{Metric: am[i], WhatIf: bm[i].Value, Change: bm[i].Value - am[i].Value}
		if am[i].Value != 0 {
			d.Relative = d.Change / am[i].Value
		}
		out[i] = d
	}
	return out
}

// Input is one input's name and its value written for people.
type Input struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// InputList lists every input with its value, in flag order.
func InputList(in *Inputs) []Input {
	out := make([]Input, 0, len(fields))
	for _, f := range fields {
		var s string
		switch f.kind {
		case kindString:
			s = *f.str(in)
		case kindBits:
			s = FormatBits(f.get(in))
		case kindDuration:
			s = FormatDuration(*f.dur(in))
			if *f.dur(in) == 0 {
				s = "0"
			}
		case kindBytes:
			v := f.get(in)
			if v < 100_000 {
				s = num(v)
			} else {
				s = FormatBytes(v)
			}
		default:
			s = num(f.get(in))
			if f.get(in) >= 100_000 {
				s = FormatCount(f.get(in))
			}
		}
		out = append(out, Input{Name: f.name, Value: s})
	}
	return out
}

// InputUnit names how an input's values are written: "number", "int",
// "bytes", "bits/s", "duration" or "string" ("" for an unknown input).
func InputUnit(name string) string {
	f, err := lookup(name)
	if err != nil {
		return ""
	}
	return [...]string{kindCount: "number", kindInt: "int", kindBytes: "bytes", kindBits: "bits/s", kindDuration: "duration", kindString: "string"}[f.kind]
}
