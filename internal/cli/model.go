package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/model"
	"github.com/kscope-dev/kscope/internal/source"
)

// modelFlags are the model's inputs as flags: the name (the model's input
// name), the default as written in --help, and the usage.
var modelFlags = []struct{ name, def, usage string }{
	{"rate", "100k", "messages produced per second, whole cluster (1.5M)"},
	{"message-size", "1024", "message value bytes (mean)"},
	{"key-size", "0", "key bytes (mean); 0: null keys"},
	{"headers", "0", "record headers per message (record format 2)"},
	{"header-size", "0", "bytes of one header's key and value together"},
	{"records-per-batch", "0", "records per batch as measured; 0: from --batch-bytes, --linger and --partitions"},
	{"batch-bytes", "16384", "producer batch.size"},
	{"linger", "5ms", "producer linger.ms"},
	{"partitions", "0", "partitions the rate spreads over; 0: batches fill to --batch-bytes"},
	{"producers", "1", "producers sending the rate"},
	{"batch-span", "0", "time a batch's timestamps span; 0: from --linger"},
	{"batches-per-request", "1", "partitions' batches in one produce request"},
	{"fetch-batches", "1", "batches of a partition in one fetch response"},
	{"compression-ratio", "1", "records' size uncompressed over compressed; 1: none"},
	{"replication-factor", "3", "replicas of each partition"},
	{"consumer-groups", "1", "consumer groups reading everything"},
	{"brokers", "6", "brokers"},
	{"nic", "10Gbit", "each broker's NIC speed, each way (10Gbit, 25G, 1.25GB/s)"},
	{"mtu", "1500", "MTU for the TCP/IP/Ethernet overhead; 0: count Kafka bytes only"},
	{"disk-bw", "0", "each broker's disk write bandwidth (500MB/s); 0: unknown"},
	{"retention", "7d", "retention: data per broker is what it holds (7d, 48h)"},
	{"data-per-broker", "0", "each broker's data (2TiB), instead of --retention"},
	{"throttle", "0", "replication throttle per broker (100MB/s, 800Mbit); 0: none"},
	{"recovery", model.RecoverSurvivors, "where a failed broker's replicas are rebuilt: survivors or replacement"},
	{"kafka-version", model.DefaultKafkaVersion, "Kafka version: sets record format and Produce/Fetch versions (0.9, 0.10, 2.8, 4.1)"},
	{"record-format", "-1", "record format (magic) 0, 1 or 2; -1: the Kafka version's"},
	{"produce-version", "-1", "Produce request version; -1: the Kafka version's"},
	{"fetch-version", "-1", "Fetch response version; -1: the Kafka version's"},
	{"client-id-len", "10", "client id length in request headers"},
	{"topic-name-len", "10", "topic name length (Produce before v13, Fetch before v13)"},
}

type modelOptions struct {
	values    map[string]*string
	whatIf    []string
	format    string
	captures  []string
	ports     []uint
	clients   []string
	quiet     bool
	tlsKeyLog string
}

func newModelCmd() *cobra.Command {
	o := modelOptions{values: map[string]*string{}}
	cmd := &cobra.Command{
		Use:   "model [flags]\n  kscope model --from-capture FILE... [--port 9092] [flags]",
		Short: "Capacity model: wire bytes per message, network and disk per broker, re-replication time",
		Long: `Computes from a workload and a cluster: the bytes on the wire per message in
the record format (record, batch and request framing), every broker's network
in (produce + replication) and out (replication + consumer fetches) and its
share of the NIC, the headroom, the disk write rate, and the time to
re-replicate a failed broker's data (limited by NIC, disk and --throttle).
Formulas and assumptions: docs/model.md.

--what-if NAME=VALUE changes an input (repeatable; all applied together) and
prints base, what-if and the change: message-size=+8, brokers=9,
replication-factor=2, rate=x2, nic=25Gbit, kafka-version=0.10.

--from-capture reads pcap/pcapng files of a broker port and measures the
inputs from the produce requests (message, key and header sizes, records
per batch, compression ratio, rate), then compares the model's produce bytes
with the measured ones. Flags given explicitly override measured inputs.

Exit status: 0, or 2 for bad input.`,
		Args:          cobra.ArbitraryArgs, // capture files, after --from-capture
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runModel(cmd, args, &o)
		},
	}
	cmd.SetFlagErrorFunc(benchFlagError)
	f := cmd.Flags()
	for _, mf := range modelFlags {
		v := &modelFlag{name: mf.name, value: mf.def}
		o.values[mf.name] = &v.value
		f.Var(v, mf.name, mf.usage)
	}
	f.StringArrayVar(&o.whatIf, "what-if", nil, "change an input: NAME=VALUE, +X, -X, +P%, xF (repeatable)")
	f.StringVar(&o.format, "format", "table", "output format: table or json")
	f.StringArrayVar(&o.captures, "from-capture", nil, "measure the inputs from this capture file (repeatable; more files may follow as arguments)")
	f.UintSliceVar(&o.ports, "port", []uint{9092}, "with --from-capture: broker port (repeatable)")
	f.StringVar(&o.tlsKeyLog, "tls-keylog", "", "with --from-capture: "+tlsKeyLogHelp)
	f.StringSliceVar(&o.clients, "client", nil, "with --from-capture: only requests from these clients (ip, ip:port or client id)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "with --from-capture: no footer on stderr")
	check(f, "format", &o.format, oneOf("table", "json"))
	check(f, "from-capture", &o.captures, each(notEmpty))
	check(f, "port", &o.ports, each(tcpPort))
	check(f, "client", &o.clients, each(notEmpty))
	return cmd
}

// modelFlag is one model input as a flag: its value is checked when set
// and applied by applyModelFlags.
type modelFlag struct {
	name, value string
}

func (f *modelFlag) String() string { return f.value }
func (f *modelFlag) Type() string   { return model.InputUnit(f.name) }
func (f *modelFlag) Set(s string) error {
	in := model.Defaults()
	if err := model.Set(&in, f.name, s); err != nil {
		return err
	}
	f.value = s
	return nil
}

// modelReport is the JSON output.
type modelReport struct {
	Measured *model.Measurement  `json:"measured,omitempty"`
	Inputs   model.Inputs        `json:"inputs"`
	Outputs  model.Outputs       `json:"outputs"`
	Check    *model.Check        `json:"check,omitempty"`
	WhatIf   *model.WhatIfResult `json:"what_if,omitempty"`
}

func runModel(cmd *cobra.Command, args []string, o *modelOptions) error {
	files := append(o.captures, args...)
	if len(args) > 0 && len(o.captures) == 0 {
		return badInput(fmt.Errorf("unexpected arguments %q: capture files go after --from-capture", args))
	}
	if err := distinctInputs(files); err != nil {
		return err
	}
	var rep modelReport
	in := model.Defaults()
	if len(files) > 0 {
		m, err := measureCaptures(files, o, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		if in, err = m.Inputs(in); err != nil {
			return badInput(err)
		}
		rep.Measured = m
	}
	if err := applyModelFlags(cmd, o, &in); err != nil {
		return badInput(err)
	}
	out, err := model.Compute(in)
	if err != nil {
		return badInput(err)
	}
	rep.Inputs, rep.Outputs = in, out
	if rep.Measured != nil {
		c := rep.Measured.CheckProduce(out)
		rep.Check = &c
	}
	if len(o.whatIf) > 0 {
		w, err := model.WhatIf(in, o.whatIf...)
		if err != nil {
			return badInput(err)
		}
		rep.WhatIf = &w
	}
	stdout := cmd.OutOrStdout()
	if o.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeModelTable(stdout, &rep)
}

// applyModelFlags sets the inputs given on the command line. A Kafka
// version given explicitly replaces the measured record format and API
// versions unless those are given too.
func applyModelFlags(cmd *cobra.Command, o *modelOptions, in *model.Inputs) error {
	flags := cmd.Flags()
	if flags.Changed("kafka-version") {
		in.RecordFormat, in.ProduceVersion, in.FetchVersion = -1, -1, -1
	}
	var errs []error
	for _, mf := range modelFlags {
		if !flags.Changed(mf.name) {
			continue
		}
		if err := model.Set(in, mf.name, *o.values[mf.name]); err != nil {
			errs = append(errs, fmt.Errorf("--%w", err))
		}
	}
	return errors.Join(errs...)
}

// measureCaptures decodes the captures with batch measurement on and
// collects the produce and fetch traffic.
func measureCaptures(files []string, o *modelOptions, stderr io.Writer) (*model.Measurement, error) {
	cfg, err := wireConfig(o.ports, "")
	if err != nil {
		return nil, err
	}
	cfg.BatchStats = true
	filter := event.RequestFilter{Clients: o.clients}
	m := &model.Measurement{}
	res, err := source.ReadFiles(files, source.Options{Wire: cfg, TLSKeyLog: o.tlsKeyLog}, func(r *event.Request) {
		if filter.Match(r) {
			m.Add(r)
		}
	})
	if err != nil {
		return nil, badInput(err)
	}
	if !o.quiet {
		printCaptureWarnings(stderr, res)
		printFooter(stderr, res)
	}
	return m, nil
}

func writeModelTable(w io.Writer, rep *modelReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if m := rep.Measured; m != nil {
		writeMeasured(tw, m)
		fmt.Fprintln(tw)
	}
	writeInputs(tw, &rep.Inputs, &rep.Outputs)
	fmt.Fprintln(tw)
	out := &rep.Outputs
	if rep.WhatIf != nil {
		fmt.Fprintf(tw, "OUTPUT\tBASE\tWHAT-IF: %s\tCHANGE\n", strings.Join(rep.WhatIf.Changes, ", "))
		for _, d := range rep.WhatIf.Diff {
			a, b := &rep.WhatIf.BaseOutputs, &rep.WhatIf.WhatIfOutput
			change := formatChange(d)
			if isRecovery(d.Key) && (!a.Recovery.Possible || !b.Recovery.Possible) {
				change = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", d.Name, formatMetric(d.Metric, a),
				formatMetric(model.Metric{Key: d.Key, Unit: d.Unit, Value: d.WhatIf}, b), change)
		}
		fmt.Fprintf(tw, "  re-replication: limited by\t%s\t%s\t\n", limitedBy(&rep.WhatIf.BaseOutputs), limitedBy(&rep.WhatIf.WhatIfOutput))
	} else {
		fmt.Fprintf(tw, "OUTPUT\tVALUE\n")
		for _, m := range out.Metrics() {
			fmt.Fprintf(tw, "  %s\t%s\n", m.Name, formatMetric(m, out))
		}
		fmt.Fprintf(tw, "  re-replication: limited by\t%s\n", limitedBy(out))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r := rep.Outputs.Recovery; !r.Possible {
		fmt.Fprintf(tw, "re-replication impossible: %s\n", r.Reason)
	}
	if w := rep.WhatIf; w != nil && !w.WhatIfOutput.Recovery.Possible {
		fmt.Fprintf(tw, "re-replication impossible with the what-if: %s\n", w.WhatIfOutput.Recovery.Reason)
	}
	if c := rep.Check; c != nil {
		fmt.Fprintln(tw)
		fmt.Fprintf(tw, "CHECK\tproduce bytes per message: predicted %.2f B, measured %.2f B (%+.2f%%)\n", c.Predicted, c.Measured, 100*c.Difference)
		fmt.Fprintf(tw, "\tover the capture's %d records: predicted %.0f B, measured %.0f B of produce requests\n", rep.Measured.Records, c.PredictedTotal, c.MeasuredTotal)
	}
	return tw.Flush()
}

// writeInputs summarises the inputs in a few lines; --format json has
// them all.
func writeInputs(tw io.Writer, in *model.Inputs, out *model.Outputs) {
	v := map[string]string{}
	for _, iv := range model.InputList(in) {
		v[iv.Name] = iv.Value
	}
	key := "null key"
	if in.KeySize > 0 {
		key = "key " + trimFloat(in.KeySize, 1) + " B"
	}
	headers := "no headers"
	if in.Headers > 0 {
		headers = fmt.Sprintf("%s headers of %s B", trimFloat(in.Headers, 2), trimFloat(in.HeaderSize, 1))
	}
	fmt.Fprintf(tw, "INPUTS\t\n")
	fmt.Fprintf(tw, "  workload\t%s msg/s, value %s B, %s, %s\n", model.FormatCount(in.Rate), trimFloat(in.MessageSize, 1), key, headers)
	batching := fmt.Sprintf("%s records per batch", trimFloat(out.RecordsPerBatch, 2))
	if in.RecordsPerBatch == 0 {
		batching += fmt.Sprintf(" (from batch-bytes %s, linger %s, partitions %s)", v["batch-bytes"], v["linger"], v["partitions"])
	}
	fmt.Fprintf(tw, "  batching\t%s spanning %s, %s per request, compression ratio %s\n", batching,
		model.FormatDuration(secondsDuration(out.BatchSpanMs/1000)), trimFloat(in.BatchesPerRequest, 2), trimFloat(in.CompressionRatio, 3))
	fmt.Fprintf(tw, "  protocol\tKafka %s: record format %d, Produce v%d, Fetch v%d; client id %d B, topic name %d B\n",
		in.KafkaVersion, out.RecordFormat, out.ProduceVersion, out.FetchVersion, in.ClientIDLen, in.TopicNameLen)
	disk := "disk bandwidth unknown"
	if in.DiskBandwidth > 0 {
		disk = "disk " + model.FormatByteRate(in.DiskBandwidth)
	}
	fmt.Fprintf(tw, "  cluster\t%d brokers, replication factor %d, consumer groups %s, NIC %s (MTU %d), %s\n",
		in.Brokers, in.ReplicationFactor, trimFloat(in.ConsumerGroups, 2), v["nic"], in.MTU, disk)
	data := "retention " + v["retention"]
	if in.DataPerBroker > 0 {
		data = "data per broker " + v["data-per-broker"]
	}
	throttle := "no throttle"
	if in.Throttle > 0 {
		throttle = "throttle " + model.FormatByteRate(in.Throttle) + " per broker"
	}
	fmt.Fprintf(tw, "  recovery\t%s, %s, rebuilt on %s\n", data, throttle, in.Recovery)
}

func writeMeasured(tw io.Writer, m *model.Measurement) {
	recs := float64(m.Records)
	fmt.Fprintf(tw, "MEASURED\t%d produce requests (%d skipped), %d records in %d batches\n", m.Requests, m.Skipped, m.Records, m.Batches)
	if r := m.Rate(); r > 0 {
		fmt.Fprintf(tw, "  produce rate\t%s msg/s over %s\n", model.FormatCount(r), model.FormatDuration(m.Last.Sub(m.First)))
	} else {
		fmt.Fprintf(tw, "  produce rate\tunknown (one instant): --rate or the default\n")
	}
	fmt.Fprintf(tw, "  message value\t%.1f B\n", float64(m.ValueBytes)/recs)
	fmt.Fprintf(tw, "  key\t%.1f B (%d null)\n", float64(m.KeyBytes)/recs, m.NullKeys)
	if m.Headers > 0 {
		fmt.Fprintf(tw, "  headers\t%.2f per message, %.1f B each\n", float64(m.Headers)/recs, float64(m.HeaderBytes)/float64(m.Headers))
	} else {
		fmt.Fprintf(tw, "  headers\tnone\n")
	}
	fmt.Fprintf(tw, "  records per batch\t%.2f\n", recs/float64(max(m.Batches, 1)))
	if m.Compressed > 0 {
		fmt.Fprintf(tw, "  compression ratio\t%.3f (%d of %d batches compressed)\n", float64(m.UncompressedBytes)/float64(max(m.RecordsBytes, 1)), m.Compressed, m.Batches)
	} else {
		fmt.Fprintf(tw, "  compression ratio\tnone\n")
	}
	fmt.Fprintf(tw, "  record format\t%d\n", m.Magic)
	fmt.Fprintf(tw, "  produce request bytes\t%d (%.2f per message)\n", m.RequestBytes, m.ProduceBytesPerMessage())
	if m.FetchResponses > 0 {
		fmt.Fprintf(tw, "  fetch responses\t%d, %d B (%d B of record batches), %s\n", m.FetchResponses, m.FetchResponseBytes, m.FetchBatchBytes, model.FormatBits(m.FetchBitsPerSec()))
	} else {
		fmt.Fprintf(tw, "  fetch responses\tnone\n")
	}
}

func limitedBy(o *model.Outputs) string {
	if !o.Recovery.Possible {
		return "impossible (below)"
	}
	return o.Recovery.LimitedBy
}

func isRecovery(key string) bool {
	return key == "recovery_seconds" || key == "recovery_rate" || key == "recovery_per_receiver"
}

// formatMetric writes a value in its unit: network in bits/s, disk in
// bytes/s, durations for people.
func formatMetric(m model.Metric, o *model.Outputs) string {
	switch m.Key {
	case "disk_share":
		if m.Value == 0 {
			return "-"
		}
	}
	if isRecovery(m.Key) && !o.Recovery.Possible {
		return "-"
	}
	return formatValue(m.Unit, m.Value)
}

func formatValue(unit string, v float64) string {
	switch unit {
	case "bits/s":
		return model.FormatBits(v)
	case "bytes/s":
		return model.FormatByteRate(v)
	case "bytes":
		if math.Abs(v) < 100_000 {
			return trimFloat(v, 2) + " B"
		}
		return model.FormatBytes(v)
	case "s":
		return model.FormatDuration(secondsDuration(v))
	case "ratio":
		return trimFloat(100*v, 2) + "%"
	case "msg/s":
		return model.FormatCount(v) + " msg/s"
	}
	return trimFloat(v, 2)
}

func formatChange(d model.Delta) string {
	if d.Change == 0 {
		return "0"
	}
	sign := "+"
	if d.Change < 0 {
		sign = "-"
	}
	var s string
	if d.Unit == "ratio" {
		s = sign + trimFloat(100*math.Abs(d.Change), 2) + " pt"
	} else {
		s = sign + formatValue(d.Unit, math.Abs(d.Change))
	}
	if d.Relative != 0 {
		s += fmt.Sprintf(" (%+.1f%%)", 100*d.Relative)
	}
	return s
}

func trimFloat(v float64, decimals int) string {
	s := fmt.Sprintf("%.*f", decimals, v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// secondsDuration converts seconds to a duration, saturating.
func secondsDuration(s float64) time.Duration {
	if s*float64(time.Second) >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	if s*float64(time.Second) <= math.MinInt64 {
		return time.Duration(math.MinInt64)
	}
	return time.Duration(s * float64(time.Second))
}
