package traffic

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/lab"
)

// JavaProducerPerf runs org.apache.kafka.tools.ProducerPerformance from
// libs: n records of recordSize bytes to topic, compression codec, acks=all,
// linger.ms=5, unthrottled.
func JavaProducerPerf(ctx context.Context, libs, addr, topic string, n, recordSize int, codec string) error {
	return JavaProducerPerfRate(ctx, libs, addr, topic, n, recordSize, codec, -1)
}

// JavaProducerPerfRate is JavaProducerPerf at rate records per second
// (-1: unthrottled).
func JavaProducerPerfRate(ctx context.Context, libs, addr, topic string, n, recordSize int, codec string, rate int) error {
	if codec == "" {
		codec = "none"
	}
	if !slices.Contains(Codecs(), codec) {
		return fmt.Errorf("traffic: unknown codec %q", codec)
	}
	out, err := runJava(ctx, libs, "org.apache.kafka.tools.ProducerPerformance",
		"--topic", topic,
		"--num-records", strconv.Itoa(n),
		"--record-size", strconv.Itoa(recordSize),
		"--throughput", strconv.Itoa(rate),
		"--producer-props",
		"bootstrap.servers="+addr,
		"compression.type="+codec,
		"linger.ms=5",
		"acks=all",
		"client.id=kscope-java-producer",
		// Bound every wait by ctx rather than the 60 s / 120 s defaults.
		"max.block.ms="+strconv.FormatInt(msLeft(ctx, 30*time.Second), 10),
	)
	if err != nil {
		return fmt.Errorf("traffic: java producer to %s: %w", topic, err)
	}
	// Delivery failures are printed per record, yet the tool exits 0.
	if strings.Contains(out, "Exception") {
		return fmt.Errorf("traffic: java producer to %s: %s", topic, firstLines(out, 5))
	}
	m := regexp.MustCompile(`(?m)^(\d+) records sent`).FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return fmt.Errorf("traffic: java producer to %s: no summary in output: %s", topic, firstLines(out, 5))
	}
	if sent, _ := strconv.Atoi(m[len(m)-1][1]); sent != n {
		return fmt.Errorf("traffic: java producer to %s: sent %d of %d records", topic, sent, n)
	}
	return nil
}

// JavaConsoleConsumer runs org.apache.kafka.tools.consumer.ConsoleConsumer
// (its home since Kafka 4.0) from libs in group group, reading n records of
// topic from the beginning. It fails when fewer arrive before ctx ends.
func JavaConsoleConsumer(ctx context.Context, libs, addr, topic, group string, n int) error {
	return JavaConsoleConsumerConfig(ctx, libs, addr, topic, group, n, "")
}

// JavaConsoleConsumerConfig is JavaConsoleConsumer with the consumer
// settings of the properties file config (--consumer.config; e.g. a lab
// broker's client properties for its SSL or SASL_SSL listener), "" for
// none.
func JavaConsoleConsumerConfig(ctx context.Context, libs, addr, topic, group string, n int, config string) error {
	var extra []string
	if config != "" {
		extra = []string{"--consumer.config", config}
	}
	out, err := runJava(ctx, libs, "org.apache.kafka.tools.consumer.ConsoleConsumer", append([]string{
		"--bootstrap-server", addr,
		"--topic", topic,
		"--group", group,
		"--from-beginning",
		"--max-messages", strconv.Itoa(n),
		// --timeout-ms is the max idle time between records; leave a
		// little of ctx so a timeout is reported by the tool, not a kill.
		"--timeout-ms", strconv.FormatInt(msLeft(ctx, 30*time.Second)*9/10, 10),
		"--consumer-property", "client.id=kscope-java-consumer",
	}, extra...)...)
	if err != nil {
		return fmt.Errorf("traffic: java consumer of %s: %w", topic, err)
	}
	m := regexp.MustCompile(`Processed a total of (\d+) messages`).FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("traffic: java consumer of %s: no summary in output: %s", topic, firstLines(out, 5))
	}
	if got, _ := strconv.Atoi(m[1]); got < n {
		return fmt.Errorf("traffic: java consumer of %s: got %d of %d records", topic, got, n)
	}
	return nil
}

// JavaConsoleProducer runs org.apache.kafka.tools.ConsoleProducer (Kafka
// 4.x) from libs, sending each of lines as one record (value only) to
// topic, acks=all, with the producer settings of the properties file
// config (--producer.config; e.g. a lab broker's client properties for
// its SSL or SASL_SSL listener), "" for none. It fails when the tool
// reports an error, since it exits 0 after failed sends.
func JavaConsoleProducer(ctx context.Context, libs, addr, topic string, lines []string, config string) error {
	args := []string{
		"--bootstrap-server", addr,
		"--topic", topic,
		"--producer-property", "acks=all",
		"--producer-property", "client.id=kscope-java-console-producer",
		"--producer-property", "max.block.ms=" + strconv.FormatInt(msLeft(ctx, 30*time.Second), 10),
	}
	if config != "" {
		args = append(args, "--producer.config", config)
	}
	out, err := runJavaInput(ctx, libs, strings.NewReader(strings.Join(lines, "\n")+"\n"),
		"org.apache.kafka.tools.ConsoleProducer", args...)
	if err != nil {
		return fmt.Errorf("traffic: java console producer to %s: %w", topic, err)
	}
	if strings.Contains(out, "ERROR") || strings.Contains(out, "Exception") {
		return fmt.Errorf("traffic: java console producer to %s: %s", topic, firstLines(out, 10))
	}
	return nil
}

// runJava runs a Kafka tool to completion and returns its combined output.
func runJava(ctx context.Context, libs, mainClass string, args ...string) (string, error) {
	return runJavaInput(ctx, libs, nil, mainClass, args...)
}

// runJavaInput is runJava with stdin read from in (nil: none).
func runJavaInput(ctx context.Context, libs string, in io.Reader, mainClass string, args ...string) (string, error) {
	cmd, err := lab.JavaCommand(ctx, libs, lab.ToolJVMArgs(), mainClass, args...)
	if err != nil {
		return "", err
	}
	cmd.Stdin = in
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// On ctx end, SIGKILL (CommandContext's default) and don't wait for
	// grandchildren holding the output pipe: there are none, but be safe.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return out.String(), fmt.Errorf("%s: %w: %s", mainClass, err, firstLines(out.String(), 10))
	}
	return out.String(), nil
}

// msLeft is the time left until ctx's deadline in ms, or def without one.
func msLeft(ctx context.Context, def time.Duration) int64 {
	d := def
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl)
	}
	return max(d.Milliseconds(), 1000)
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
