package clientzoo

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"time"
)

// runSarama runs the zoo-sarama binary (sarama/main.go, built by
// scripts/zoo-sarama.sh).
func runSarama(ctx context.Context, env Env, c Client, r *Result) error {
	if env.Tools == nil || env.Tools.Sarama == "" {
		return errors.New("zoo-sarama not built (EnsureTools)")
	}
	args, err := saramaArgs(c, env.Bootstrap, time.Until(deadline(ctx)))
	if err != nil {
		return err
	}
	return runSubprocess(ctx, exec.CommandContext(ctx, env.Tools.Sarama, args...), r)
}

// saramaArgs are zoo-sarama's flags for c (each named after the Sarama
// setting it sets; see sarama/main.go).
func saramaArgs(c Client, bootstrap string, timeout time.Duration) ([]string, error) {
	if _, err := parseRelease(c.Pin); err != nil {
		return nil, errors.New("a Sarama client needs Pin, its Config.Version: " + err.Error())
	}
	args := []string{
		"-bootstrap=" + bootstrap,
		"-client-id=" + c.ClientID,
		"-topic=" + c.Topic,
		"-version=" + c.Pin,
		// Its own bound comes first, so that it reports what it did.
		"-timeout=" + max(timeout-3*time.Second, time.Second).String(),
	}
	if p := c.Producer; p != nil {
		if p.Transactional {
			return nil, errors.New("the zoo's Sarama producer is not transactional")
		}
		args = append(args, "-produce",
			"-acks="+strconv.Itoa(int(p.Acks)),
			"-compression="+p.Compression,
			"-idempotent="+strconv.FormatBool(p.Idempotent),
			"-batch-bytes="+strconv.Itoa(p.BatchSize),
			"-linger-ms="+strconv.Itoa(p.LingerMs),
			"-records="+strconv.Itoa(p.Records),
			"-record-size="+strconv.Itoa(p.RecordSize),
			"-burst="+strconv.Itoa(p.Burst),
			"-rate="+strconv.Itoa(p.Rate))
	}
	if k := c.Consumer; k != nil {
		if k.GroupProtocol != Classic {
			return nil, errors.New("Sarama has classic consumer groups only")
		}
		args = append(args,
			"-group="+k.Group,
			"-consume="+strconv.Itoa(k.Records),
			"-fetch-max-wait-ms="+strconv.Itoa(k.FetchMaxWaitMs),
			"-fetch-min-bytes="+strconv.Itoa(k.FetchMinBytes))
	}
	return args, nil
}
