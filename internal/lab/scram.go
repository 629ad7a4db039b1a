package lab

import (
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// scramArg is the value of `kafka-storage format --add-scram` that puts
// u's credential into the cluster's first metadata. It holds u's password
// (on the format tool's command line for the second it runs).
func scramArg(u User) string {
	return u.Mechanism + "=[name=" + u.Name + ",password=" + u.Password + "]"
}

// scramMinKafkaMinor: KRaft has SCRAM (KIP-900) from Kafka 3.5 on.
const scramMinKafkaMinor = 5

// checkSecurityVersion fails for a release whose KRaft mode lacks SCRAM
// (KIP-900: 3.5 on).
func checkSecurityVersion(version string) error {
	major, minor, err := parseVersion(version)
	if err != nil {
		return err
	}
	if major < 3 || major == 3 && minor < scramMinKafkaMinor {
		return fmt.Errorf("lab: Security needs Kafka 3.%d or later (SCRAM in KRaft), not %s", scramMinKafkaMinor, version)
	}
	return nil
}

// upsertSCRAM stores u's SCRAM-SHA-512 credential in the cluster's
// metadata through the broker at addr (PLAINTEXT): what a restart needs
// when the storage was formatted without it or users.json was made again.
func upsertSCRAM(ctx context.Context, addr string, u User) error {
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return fmt.Errorf("lab: SCRAM salt: %w", err)
	}
	salted, err := pbkdf2.Key(sha512.New, u.Password, salt, scramIterations, sha512.Size)
	if err != nil {
		return fmt.Errorf("lab: SCRAM credential: %w", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(ReadyClientID))
	if err != nil {
		return fmt.Errorf("lab: SCRAM credential: %w", err)
	}
	defer cl.Close()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = u.Name, 2, scramIterations, salt, salted // 2: SCRAM-SHA-512
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("lab: SCRAM credential of %s: %w", u.Name, err)
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			msg := ""
			if r.ErrorMessage != nil {
				msg = ": " + *r.ErrorMessage
			}
			return fmt.Errorf("lab: SCRAM credential of %s: %w%s", r.User, err, msg)
		}
	}
	return nil
}

// waitSecure polls until b's SSL listener answers Metadata and so does
// its SASL_SSL listener to the SCRAM user, whose credential reaches each
// broker through the metadata log a moment after the controller has it.
// exited is closed when the broker process dies.
func waitSecure(ctx context.Context, b *Broker, users Users, exited <-chan struct{}) error {
	tlsCfg, err := b.TLSConfig()
	if err != nil {
		return err
	}
	probes := []struct {
		name, addr string
		mech       sasl.Mechanism
	}{
		{ListenerSSL, b.SSLAddr(), nil},
		{ListenerSASLSSL + " as " + users.SCRAM.String(), b.SASLSSLAddr(),
			scram.Auth{User: users.SCRAM.Name, Pass: users.SCRAM.Password}.AsSha512Mechanism()},
	}
	for _, p := range probes {
		opts := []kgo.Opt{kgo.SeedBrokers(p.addr), kgo.ClientID(ReadyClientID), kgo.DialTLSConfig(tlsCfg)}
		if p.mech != nil {
			opts = append(opts, kgo.SASL(p.mech))
		}
		if err := pollMetadata(ctx, opts, b.NodeID(), exited); err != nil {
			return fmt.Errorf("lab: broker %d: %s listener on %s: %w", b.NodeID(), p.name, p.addr, err)
		}
	}
	return nil
}

// pollMetadata asks the seed broker of a client with opts for Metadata
// every 200 ms until it lists broker id.
func pollMetadata(ctx context.Context, opts []kgo.Opt, id int, exited <-chan struct{}) error {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		last := probeMetadata(ctx, cl, id, 1)
		if last == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.New("broker process exited")
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}
