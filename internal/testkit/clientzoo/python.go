package clientzoo

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

//go:embed python/zoo.py
var zooPy string

// pythonJob is zoo.py's argument: the workload, and each side's
// configuration in its library's own names.
type pythonJob struct {
	Library    string         `json:"library"` // "confluent-kafka" or "kafka-python"
	Topic      string         `json:"topic"`
	Records    int            `json:"records"`
	RecordSize int            `json:"record_size"`
	Burst      int            `json:"burst"`
	Rate       int            `json:"rate"`
	Consume    int            `json:"consume"`
	TimeoutS   float64        `json:"timeout_s"`
	Producer   map[string]any `json:"producer"`
	Consumer   map[string]any `json:"consumer"`
}

// runPython runs python/zoo.py in the venv's python: librdkafka (through
// confluent-kafka) or kafka-python.
func runPython(ctx context.Context, env Env, c Client, r *Result) error {
	if env.Tools == nil || env.Tools.Python == "" {
		return errors.New("python venv not resolved (EnsureTools)")
	}
	job, err := pythonJobFor(c, env.Bootstrap, time.Until(deadline(ctx)))
	if err != nil {
		return err
	}
	arg, err := json.Marshal(job)
	if err != nil {
		return err
	}
	// -c, not a file: the script is embedded, and nothing is written.
	cmd := exec.CommandContext(ctx, env.Tools.Python, "-c", zooPy, string(arg))
	return runSubprocess(ctx, cmd, r)
}

func pythonJobFor(c Client, bootstrap string, timeout time.Duration) (pythonJob, error) {
	// The script's own deadline comes first, so that it reports what it
	// did; the kill at ctx's end is the backstop.
	job := pythonJob{Topic: c.Topic, TimeoutS: max(timeout.Seconds()-3, 1)}
	var err error
	switch c.Library {
	case Librdkafka:
		job.Library = "confluent-kafka"
		job.Producer, job.Consumer, err = rdkafkaConfigs(c, bootstrap, timeout)
	case KafkaPython:
		job.Library = "kafka-python"
		job.Producer, job.Consumer, err = kafkaPythonConfigs(c, bootstrap, timeout)
	default:
		err = fmt.Errorf("library %q is not a Python one", c.Library)
	}
	if p := c.Producer; p != nil {
		job.Records, job.RecordSize, job.Burst, job.Rate = p.Records, p.RecordSize, p.Burst, p.Rate
	}
	if k := c.Consumer; k != nil {
		job.Consume = k.Records
	}
	return job, err
}

// rdkafkaConfigs are librdkafka's settings (CONFIGURATION.md names).
func rdkafkaConfigs(c Client, bootstrap string, timeout time.Duration) (producer, consumer map[string]any, err error) {
	common := map[string]any{"bootstrap.servers": bootstrap, "client.id": c.ClientID}
	if c.Pin != "" {
		if _, err := parseRelease(c.Pin); err != nil {
			return nil, nil, err
		}
		// Told the broker's release instead of asking: the versions of
		// that release, and no ApiVersions request at all.
		common["api.version.request"] = false
		common["broker.version.fallback"] = c.Pin
	}
	if p := c.Producer; p != nil {
		if p.Transactional {
			return nil, nil, errors.New("the zoo's librdkafka producer is not transactional")
		}
		producer = with(common, map[string]any{
			"acks":               int(p.Acks),
			"compression.type":   p.Compression,
			"enable.idempotence": p.Idempotent,
			"batch.size":         p.BatchSize,
			"linger.ms":          p.LingerMs,
			"message.timeout.ms": int(timeout.Milliseconds()),
		})
	}
	if k := c.Consumer; k != nil {
		consumer = with(common, map[string]any{
			"group.id":           k.Group,
			"group.protocol":     k.GroupProtocol,
			"fetch.wait.max.ms":  k.FetchMaxWaitMs,
			"fetch.min.bytes":    k.FetchMinBytes,
			"auto.offset.reset":  "earliest",
			"enable.auto.commit": false,
		})
	}
	return producer, consumer, nil
}

// kafkaPythonConfigs are kafka-python's keyword arguments.
func kafkaPythonConfigs(c Client, bootstrap string, timeout time.Duration) (producer, consumer map[string]any, err error) {
	common := map[string]any{"bootstrap_servers": bootstrap, "client_id": c.ClientID}
	if c.Pin != "" {
		v, err := kafkaPythonAPIVersion(c.Pin)
		if err != nil {
			return nil, nil, err
		}
		common["api_version"] = v
	}
	if p := c.Producer; p != nil {
		if p.Transactional {
			return nil, nil, errors.New("the zoo's kafka-python producer is not transactional")
		}
		var acks any = int(p.Acks)
		if p.Acks == -1 {
			acks = "all"
		}
		var codec any = p.Compression
		if p.Compression == "none" {
			codec = nil
		}
		producer = with(common, map[string]any{
			"acks":               acks,
			"compression_type":   codec,
			"enable_idempotence": p.Idempotent,
			"batch_size":         p.BatchSize,
			"linger_ms":          p.LingerMs,
			"max_block_ms":       int(timeout.Milliseconds()),
			"request_timeout_ms": javaRequestTimeoutMs,
		})
	}
	if k := c.Consumer; k != nil {
		if k.GroupProtocol != Classic {
			return nil, nil, errors.New("kafka-python has classic consumer groups only")
		}
		consumer = with(common, map[string]any{
			"group_id":           k.Group,
			"fetch_max_wait_ms":  k.FetchMaxWaitMs,
			"fetch_min_bytes":    k.FetchMinBytes,
			"auto_offset_reset":  "earliest",
			"enable_auto_commit": false,
			"request_timeout_ms": javaRequestTimeoutMs + k.FetchMaxWaitMs,
		})
	}
	return producer, consumer, nil
}

// kafkaPythonAPIVersion turns "0.10.1" into kafka-python's api_version
// tuple (a list in JSON; zoo.py makes it a tuple).
func kafkaPythonAPIVersion(pin string) ([]int, error) {
	if _, err := parseRelease(pin); err != nil {
		return nil, err
	}
	var v []int
	for _, part := range strings.Split(pin, ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, fmt.Errorf("api_version %q: %w", pin, err)
		}
		v = append(v, n)
	}
	return v, nil
}

// with is a copy of base with extra added.
func with(base, extra map[string]any) map[string]any {
	m := maps.Clone(base)
	maps.Copy(m, extra)
	return m
}
