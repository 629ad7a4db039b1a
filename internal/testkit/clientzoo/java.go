package clientzoo

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kscope-dev/kscope/internal/lab"
)

// Java client features by the kafka-clients release that added them.
const (
	javaZstdFrom          = "2.1.0" // compression.type=zstd (KIP-110)
	javaDeliveryTimeoutAt = "2.1.0" // delivery.timeout.ms (KIP-91)
	javaGroupProtocolFrom = "3.7.0" // group.protocol (KIP-848)
	javaMinVersion        = "2.0.0" // ZooClient uses poll(Duration)
)

// javaRequestTimeoutMs bounds each request of the Java clients, well
// inside a client's Timeout, so that a broker that never answers is
// reported by the client rather than by a kill.
const javaRequestTimeoutMs = 10000

// runJava runs ZooClient (java/ZooClient.java) on kafka-clients
// c.Version: one JVM that produces, then consumes.
func runJava(ctx context.Context, env Env, c Client, r *Result) error {
	if env.Tools == nil || env.Tools.JavaLibs[c.Version] == "" {
		return fmt.Errorf("kafka-clients %s not resolved (EnsureTools)", c.Version)
	}
	args, err := javaArgs(c, env.Bootstrap, deadline(ctx))
	if err != nil {
		return err
	}
	java, err := lab.JavaPath()
	if err != nil {
		return err
	}
	cp := env.Tools.JavaClasses[c.Version] + string(filepath.ListSeparator) + lab.Classpath(env.Tools.JavaLibs[c.Version])
	argv := append(lab.ToolJVMArgs(), "-cp", cp, "ZooClient")
	cmd := exec.CommandContext(ctx, java, append(argv, args...)...)
	return runSubprocess(ctx, cmd, r)
}

// deadline is ctx's deadline (RunClient always sets one).
func deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(DefaultTimeout)
}

// javaArgs is ZooClient's command line: a produce job and a consume job,
// separated by "--", each with the properties c declares.
func javaArgs(c Client, bootstrap string, until time.Time) ([]string, error) {
	if !atLeast(c.Version, javaMinVersion) {
		return nil, fmt.Errorf("kafka-clients %q: the zoo's Java client needs %s or later", c.Version, javaMinVersion)
	}
	untilMs := strconv.FormatInt(until.UnixMilli(), 10)
	timeoutMs := max(time.Until(until).Milliseconds(), 1000)
	var args []string
	if p := c.Producer; p != nil {
		props, err := javaProducerProps(c, bootstrap, timeoutMs)
		if err != nil {
			return nil, err
		}
		args = append(args, "produce", c.Topic, strconv.Itoa(p.Records), strconv.Itoa(p.RecordSize),
			strconv.Itoa(p.Burst), strconv.Itoa(p.Rate), untilMs)
		args = append(args, props...)
	}
	if k := c.Consumer; k != nil {
		props, err := javaConsumerProps(c, bootstrap)
		if err != nil {
			return nil, err
		}
		if len(args) > 0 {
			args = append(args, "--")
		}
		args = append(args, "consume", c.Topic, strconv.Itoa(k.Records), untilMs)
		args = append(args, props...)
	}
	return args, nil
}

func javaProducerProps(c Client, bootstrap string, timeoutMs int64) ([]string, error) {
	p := c.Producer
	if p.Compression == "zstd" && !atLeast(c.Version, javaZstdFrom) {
		return nil, fmt.Errorf("kafka-clients %s has no zstd (from %s)", c.Version, javaZstdFrom)
	}
	acks := strconv.Itoa(int(p.Acks))
	if p.Acks == -1 {
		acks = "all"
	}
	props := []string{
		"bootstrap.servers=" + bootstrap,
		"client.id=" + c.ClientID,
		"acks=" + acks,
		"compression.type=" + p.Compression,
		"enable.idempotence=" + strconv.FormatBool(p.Idempotent),
		"batch.size=" + strconv.Itoa(p.BatchSize),
		"linger.ms=" + strconv.Itoa(p.LingerMs),
		"max.block.ms=" + strconv.FormatInt(timeoutMs, 10),
		"request.timeout.ms=" + strconv.Itoa(javaRequestTimeoutMs),
	}
	if atLeast(c.Version, javaDeliveryTimeoutAt) {
		// It must cover linger.ms + request.timeout.ms, or the client
		// refuses to start.
		props = append(props, "delivery.timeout.ms="+strconv.FormatInt(max(timeoutMs, int64(javaRequestTimeoutMs+p.LingerMs)), 10))
	}
	if p.Transactional {
		props = append(props, "transactional.id="+c.TransactionalID(),
			"transaction.timeout.ms="+strconv.FormatInt(max(timeoutMs, 1000), 10))
	}
	return props, nil
}

func javaConsumerProps(c Client, bootstrap string) ([]string, error) {
	k := c.Consumer
	props := []string{
		"bootstrap.servers=" + bootstrap,
		"client.id=" + c.ClientID,
		"group.id=" + k.Group,
		"fetch.max.wait.ms=" + strconv.Itoa(k.FetchMaxWaitMs),
		"fetch.min.bytes=" + strconv.Itoa(k.FetchMinBytes),
		"request.timeout.ms=" + strconv.Itoa(javaRequestTimeoutMs+k.FetchMaxWaitMs),
		// Bounds commitSync and the other blocking calls (2.0+).
		"default.api.timeout.ms=" + strconv.Itoa(javaRequestTimeoutMs),
	}
	switch {
	case atLeast(c.Version, javaGroupProtocolFrom):
		// Explicit even for classic, the default, so that the wire is
		// what the declaration says whatever a later default.
		props = append(props, "group.protocol="+k.GroupProtocol)
	case k.GroupProtocol == KIP848:
		return nil, errors.New("a KIP-848 consumer needs kafka-clients " + javaGroupProtocolFrom + " or later")
	}
	return props, nil
}
