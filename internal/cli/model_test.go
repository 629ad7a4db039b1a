package cli

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/model"
)

const modelCapture = "../../testdata/captures/produce-lz4-and-ids.pcapng"

// TestModelFlagDefaults: the defaults --help shows are the model's.
func TestModelFlagDefaults(t *testing.T) {
	in := model.Defaults()
	for _, mf := range modelFlags {
		if err := model.Set(&in, mf.name, mf.def); err != nil {
			t.Errorf("--%s default %q: %v", mf.name, mf.def, err)
		}
	}
	if in != model.Defaults() {
		t.Errorf("flag defaults give %+v, the model's are %+v", in, model.Defaults())
	}
	if len(modelFlags) != len(model.InputNames()) {
		t.Errorf("%d input flags for %d inputs", len(modelFlags), len(model.InputNames()))
	}
}

// TestModelSeedJSON runs the Heroku seed through the command: Kafka 0.9 to
// 0.10 at 1.5M msg/s with replication factor 3 is +288 Mbit/s into the
// cluster's brokers.
func TestModelSeedJSON(t *testing.T) {
	code, stdout, stderr := run(t, "model", "--rate", "1.5M", "--message-size", "100", "--records-per-batch", "100",
		"--kafka-version", "0.9", "--what-if", "kafka-version=0.10.0", "--format", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep modelReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if rep.WhatIf == nil {
		t.Fatal("no what_if in the output")
	}
	found := false
	for _, d := range rep.WhatIf.Diff {
		if d.Key == "cluster_in" {
			found = true
			if math.Abs(d.Change-288e6) > 1e-3 {
				t.Errorf("cluster in changed by %v bit/s, want 288e6", d.Change)
			}
		}
	}
	if !found {
		t.Error("no cluster_in in the diff")
	}
	if rep.Outputs.RecordFormat != 0 || rep.WhatIf.WhatIfOutput.RecordFormat != 1 {
		t.Errorf("record formats %d and %d, want 0 and 1", rep.Outputs.RecordFormat, rep.WhatIf.WhatIfOutput.RecordFormat)
	}
}

func TestModelTable(t *testing.T) {
	code, stdout, stderr := run(t, "model", "--rate", "2M", "--message-size", "500", "--records-per-batch", "50",
		"--nic", "25Gbit", "--retention", "1d", "--throttle", "100MB/s", "--what-if", "brokers=9")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"INPUTS", "OUTPUT", "BASE", "WHAT-IF: brokers=9", "cluster: into brokers", "Gbit/s",
		"per broker: disk writes", "MB/s", "re-replication: time", "24h29m", "10h12m", "(-58.3%)", "throttle"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestModelFromCapture is the capture check through the command: the
// model's produce bytes for the measured inputs within 5% of the measured
// produce request bytes.
func TestModelFromCapture(t *testing.T) {
	code, stdout, stderr := run(t, "model", "--from-capture", modelCapture, "--format", "json", "-q")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep modelReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if rep.Measured == nil || rep.Check == nil {
		t.Fatalf("no measurement or check: %s", stdout)
	}
	if rep.Measured.Records != 932 || rep.Measured.RequestBytes != 392588 {
		t.Errorf("measured %d records in %d bytes, want 932 in 392588", rep.Measured.Records, rep.Measured.RequestBytes)
	}
	if math.Abs(rep.Check.Difference) > 0.05 {
		t.Errorf("predicted %.2f, measured %.2f bytes per message: %+.2f%%, want within 5%%", rep.Check.Predicted, rep.Check.Measured, 100*rep.Check.Difference)
	}
	// A flag overrides what was measured.
	code, stdout, _ = run(t, "model", "--from-capture", modelCapture, "--client", "perf-producer-client", "--message-size", "600", "-q")
	if code != ExitOK || !strings.Contains(stdout, "value 600 B") || !strings.Contains(stdout, "CHECK") {
		t.Errorf("exit %d, output:\n%s", code, stdout)
	}
	code, stdout, _ = run(t, "model", "--from-capture", modelCapture, "--client", "perf-producer-client", "-q")
	if code != ExitOK || !strings.Contains(stdout, "measured 526.15 B (+0.00%)") {
		t.Errorf("exit %d, output:\n%s", code, stdout)
	}
}

func TestModelBadInput(t *testing.T) {
	cases := [][]string{
		{"model", "--nic", "10Gbat"},
		{"model", "--replication-factor", "4", "--brokers", "3"},
		{"model", "--what-if", "nope=1"},
		{"model", "--what-if", "brokers"},
		{"model", "--kafka-version", "0.9", "--headers", "1"},
		{"model", "--format", "xml"},
		{"model", "--rate", "0"},
		{"model", "--retention", "7q"},
		{"model", "stray-argument"},
		{"model", "--from-capture", "/nonexistent.pcap"},
		{"model", "--from-capture", "model_test.go"},
		{"model", "--no-such-flag"},
	}
	for _, args := range cases {
		if code, _, stderr := run(t, args...); code != ExitBadInput {
			t.Errorf("%q: exit %d, want %d (%s)", args, code, ExitBadInput, stderr)
		}
	}
}
