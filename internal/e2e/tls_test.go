package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kscope-dev/kscope/internal/cli"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/keylogagent"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/source"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/testkit/requestlog"
	"github.com/kscope-dev/kscope/internal/testkit/traffic"
	"github.com/kscope-dev/kscope/internal/wire"
)

// TestTLSAndSASL is issue 18's acceptance: a real broker with SSL and
// SASL_SSL listeners, the extract-tls-secrets agent attached to it for
// the key log, and clients kscope did not write (franz-go on TLS 1.3 and,
// pinned, 1.2 with SCRAM-SHA-512; the Java console producer with PLAIN on
// TLS 1.2 and consumer on TLS 1.3; librdkafka through confluent-kafka
// with SCRAM). Every request of Kafka's request log on those listeners
// must be decoded with its API, version and partitions, every message id
// found, the SASL principals named and the passwords nowhere; without the
// key log, or with a wrong one, nothing is invented and each connection
// says why.
func TestTLSAndSASL(t *testing.T) {
	libs := labtest.RequireKafka(t)
	labtest.RequireRoot(t)
	labtest.Tool("taskset") // pin
	python := labtest.Tool("python3")
	if python == "" || exec.Command(python, "-c", "import confluent_kafka, kafka").Run() != nil {
		labtest.Unavailable(t, "python3 with confluent-kafka and kafka-python (pip install confluent-kafka kafka-python) not found")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	if _, err := keylogagent.EnsureJar(ctx); err != nil {
		labtest.Unavailable(t, "the extract-tls-secrets agent jar: %v", err)
	}
	dir := t.TempDir()
	// SASL sessions expire after reauthMs: clients that support KIP-368
	// re-authenticate on their open connections.
	const reauthMs = 4000
	b := labtest.Broker(t, lab.BrokerConfig{Dir: filepath.Join(dir, "broker"), RequestLog: true, LibsDir: libs,
		LogDirs: []string{ramDir(t)}, Security: &lab.SecurityConfig{},
		ExtraProps: map[string]string{"connections.max.reauth.ms": strconv.Itoa(reauthMs)}})
	users, err := b.Users()
	if err != nil {
		t.Fatal(err)
	}
	// As in the plaintext ground truth test (TestRequestsOnRealBroker):
	// the broker on a core of its own with real-time network threads, so
	// that its clock (totalTimeMs) is not held up by the clients'.
	pin(t, b.PID(), "1")
	pin(t, os.Getpid(), "0")
	t.Cleanup(func() { pin(t, os.Getpid(), "0,1") })
	prioritizeNetworkThreads(t, b.PID())
	secrets := []string{users.Plain.Password, users.SCRAM.Password}
	for _, s := range secrets {
		if len(s) < 12 {
			t.Fatalf("a lab password of %d characters: too short to grep for", len(s))
		}
	}
	const n = 300
	keyLog := filepath.Join(dir, "tls-keys.log")
	if err := keylogagent.Attach(ctx, b.PID(), keyLog); err != nil {
		t.Fatalf("attach the key-log agent: %v", err)
	}
	if st, err := os.Stat(keyLog); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key log %v, %v: want mode 0600", st, err)
	}
	tlsCfg, err := b.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	// The same workload once before the captures: a broker just started
	// runs its TLS code interpreted until the JIT has compiled it, which
	// puts milliseconds of the broker's time outside totalTimeMs on the
	// TLS listener only (TLS 271/315 within 1 ms against plaintext's
	// 302/319 in one cold run). What is compared is the decoder, not the
	// JIT.
	if _, err := produceAlternating(ctx, n, map[string][]kgo.Opt{
		"warm-plain": {kgo.SeedBrokers(b.Addr())},
		"warm-tls13": {kgo.SeedBrokers(b.SSLAddr()), kgo.DialTLSConfig(tlsCfg)},
	}); err != nil {
		t.Fatalf("warm-up on PLAINTEXT and SSL: %v", err)
	}
	sslPort, saslPort := portOf(t, b.SSLAddr()), portOf(t, b.SASLSSLAddr())
	pcaps := []string{filepath.Join(dir, "ssl.pcap"), filepath.Join(dir, "sasl-ssl.pcap")}
	stopSSL := labtest.Capture(t, "lo", sslPort, pcaps[0])
	stopSASL := labtest.Capture(t, "lo", saslPort, pcaps[1])
	// The same client and workload on the PLAINTEXT listener, in the same
	// run: the reference for "as close as on plaintext".
	plainPort := portOf(t, b.Addr())
	plainPcap := filepath.Join(dir, "plaintext.pcap")
	stopPlain := labtest.Capture(t, "lo", plainPort, plainPcap)
	captureStart := time.Now().Add(time.Millisecond)
	defer func() {
		for _, f := range append(slices.Clone(pcaps), keyLog) {
			keepOnFailure(t, f)
		}
	}()

	tls12 := tlsCfg.Clone()
	tls12.MaxVersion = tls.VersionTLS12
	scramAuth := scram.Auth{User: users.SCRAM.Name, Pass: users.SCRAM.Password}.AsSha512Mechanism()
	var ids []string
	franz := func(name string, opts ...kgo.Opt) {
		t.Helper()
		sent, err := produceAlternating(ctx, n, map[string][]kgo.Opt{name: opts})
		if err != nil {
			t.Fatalf("franz-go %s: %v", name, err)
		}
		ids = append(ids, sent[name]...)
	}
	// The same franz-go workload on PLAINTEXT and on TLS 1.3, a record
	// on each in turn, so that both meet the same machine.
	tlsIDs, err := produceAlternating(ctx, n, map[string][]kgo.Opt{
		"franz-plain": {kgo.SeedBrokers(b.Addr())},
		"franz-tls13": {kgo.SeedBrokers(b.SSLAddr()), kgo.DialTLSConfig(tlsCfg)},
	})
	if err != nil {
		t.Fatalf("franz-go on PLAINTEXT and SSL: %v", err)
	}
	ids = append(ids, tlsIDs["franz-tls13"]...)
	franz("franz-scram-tls12", kgo.SeedBrokers(b.SASLSSLAddr()), kgo.DialTLSConfig(tls12), kgo.SASL(scramAuth))

	plain12 := filepath.Join(dir, "client-plain-tls12.properties")
	if err := b.WriteClientProperties(plain12, lab.ClientSecurity{Mechanism: lab.MechanismPlain, TLSVersion: lab.TLSv12}); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf("java-console-%d", i))
	}
	if err := traffic.JavaConsoleProducer(ctx, libs, b.SASLSSLAddr(), "tls-java", lines, plain12); err != nil {
		t.Fatal(err)
	}
	if err := traffic.JavaConsoleConsumerConfig(ctx, libs, b.SSLAddr(), "tls-java", "tls-java-group", n, b.ClientPropertiesFile("")); err != nil {
		t.Fatal(err)
	}
	pyIDs := pythonProduce(t, ctx, python, b, users.SCRAM, "tls-python", n)
	ids = append(ids, pyIDs...)
	saslV0(t, ctx, python, b, users.Plain)
	reauthenticate(t, ctx, b, scramAuth, 2*reauthMs*time.Millisecond)
	time.Sleep(time.Second) // the last responses leave, the request log catches up
	stopSSL()
	stopSASL()
	stopPlain()

	var logged []requestlog.Entry
	for _, port := range []int{sslPort, saslPort} {
		logged = append(logged, brokerLogEntries(t, b, port, captureStart, time.Now())...)
	}
	if len(logged) < 50 {
		t.Fatalf("the request log has %d requests on the TLS listeners", len(logged))
	}
	t.Run("clients on SASL_SSL", func(t *testing.T) {
		checkClientsPrincipals(t, pcaps[1], saslPort, keyLog, brokerLogEntries(t, b, saslPort, captureStart, time.Now()))
	})

	// With the key log.
	cfg := wire.DefaultConfig()
	cfg.Ports = []uint16{uint16(sslPort), uint16(saslPort)}
	var reqs []*event.Request
	res, err := source.ReadFiles(pcaps[:1], source.Options{Wire: cfg, TLSKeyLog: keyLog}, func(r *event.Request) { reqs = append(reqs, r) })
	if err != nil {
		t.Fatal(err)
	}
	res2, err := source.ReadFiles(pcaps[1:], source.Options{Wire: cfg, TLSKeyLog: keyLog}, func(r *event.Request) { reqs = append(reqs, r) })
	if err != nil {
		t.Fatal(err)
	}
	res.Add(res2)
	res.TLS.Problems = append(res.TLS.Problems, res2.TLS.Problems...)
	t.Logf("decoded with the key log: %s", res.FormatFooter())
	w := res.Wire
	if w.TLSConnections == 0 || w.TLSUndecrypted() != 0 || w.TLSDecrypted == 0 {
		t.Errorf("TLS connections %d, decrypted %d, not decrypted %d (%+v): every connection began after the attach", w.TLSConnections, w.TLSDecrypted, w.TLSUndecrypted(), res.TLSWarnings())
	}
	if w.DecodeErrors != 0 || w.BatchErrors != 0 || w.UnknownAPIs != 0 {
		t.Errorf("decode errors: %+v", w)
	}
	lost := tsharkLostSegments(t, pcaps[0]) + tsharkLostSegments(t, pcaps[1])
	if lost == 0 && (w.SkippedBytes != 0 || w.Gaps != 0) {
		t.Errorf("a capture without lost segments must decode without loss: %+v", w)
	}

	byKey := index(reqs)
	var found, compared, within int
	var diffs []float64
	for _, e := range logged {
		r, ok := byKey.find(e.ClientAddr, e.CorrelationID, e.Time)
		if !ok {
			t.Errorf("logged request not decoded: %s v%d corr %d from %s", e.APIName, e.APIVersion, e.CorrelationID, e.ClientAddr)
			continue
		}
		found++
		if r.APIKey != e.APIKey || r.APIVersion != e.APIVersion {
			t.Errorf("corr %d from %s: decoded key %d v%d, logged key %d v%d", e.CorrelationID, e.ClientAddr, r.APIKey, r.APIVersion, e.APIKey, e.APIVersion)
		}
		if want, got, ok := samePartitions(e, r); !ok {
			t.Errorf("corr %d from %s (%s): partitions decoded %v, logged %v", e.CorrelationID, e.ClientAddr, r.API, got, want)
		}
		if r.Answered && !r.Partial {
			compared++
			d := math.Abs(r.BrokerMs - e.TotalTimeMs)
			diffs = append(diffs, d)
			if d <= 1 {
				within++
			}
		}
	}
	slices.Sort(diffs)
	if len(diffs) > 0 {
		t.Logf("%d/%d logged requests decoded; latency vs the broker's totalTimeMs: %d/%d within 1 ms, |difference| median %.3f ms, p90 %.3f ms, max %.3f ms",
			found, len(logged), within, compared, diffs[len(diffs)/2], diffs[len(diffs)*9/10], diffs[len(diffs)-1])
	}
	if found != len(logged) {
		t.Errorf("%d of %d logged requests decoded", found, len(logged))
	}
	if compared == 0 || float64(within) < 0.8*float64(compared) {
		t.Errorf("%d of %d requests within 1 ms of totalTimeMs", within, compared)
	}
	// Like for like: the same franz-go workload on TLS 1.3 and on
	// PLAINTEXT, one after the other in this run.
	plainReqs, _ := decode(t, plainPort, plainPcap)
	plainLogged := brokerLogEntries(t, b, plainPort, captureStart, time.Now())
	pw, pc, pmed := agreement(plainLogged, plainReqs, "franz-plain")
	tw, tc, tmed := agreement(logged, reqs, "franz-tls13")
	t.Logf("franz-go, same workload: PLAINTEXT %d/%d within 1 ms of totalTimeMs (median |difference| %.3f ms), TLS 1.3 %d/%d (median %.3f ms)",
		pw, pc, pmed, tw, tc, tmed)
	if pc == 0 || tc == 0 || float64(tw)/float64(tc) < float64(pw)/float64(pc)-0.05 {
		t.Errorf("TLS agrees with totalTimeMs less than plaintext: %d/%d against %d/%d within 1 ms", tw, tc, pw, pc)
	}

	// Every message id, and the principals and mechanisms of the SASL
	// connections.
	seen := map[string]bool{}
	principals := map[string]bool{}
	mechanisms := map[string]bool{}
	for _, r := range reqs {
		for _, p := range r.Partitions {
			if r.APIKey == 0 {
				for _, id := range p.MessageIDs {
					seen[id] = true
				}
			}
		}
		if r.Principal != "" {
			principals[r.Principal] = true
		}
		if r.SASLMechanism != "" {
			mechanisms[r.SASLMechanism] = true
		}
	}
	missing := 0
	for _, id := range ids {
		if !seen[id] {
			missing++
		}
	}
	if missing != 0 {
		t.Errorf("%d of %d message ids not found in the decoded produce requests", missing, len(ids))
	}
	// kafka-python pinned to Kafka 0.10.0 authenticates with
	// SaslHandshake v0 and raw tokens; what it sends after them (old
	// versions Kafka 4 refuses) must still be decoded as its requests.
	var v0Handshakes, v0After int
	for _, r := range reqs {
		switch {
		case r.ClientID != "kafka-python-v0":
		case r.API == "SASLHandshake" && r.APIVersion == 0 && r.SASLMechanism == lab.MechanismPlain:
			v0Handshakes++
		case r.API != "ApiVersions" && r.API != "SASLHandshake":
			if r.Principal != users.Plain.Name {
				t.Errorf("kafka-python-v0 %s v%d corr %d: principal %q, want %q", r.API, r.APIVersion, r.CorrelationID, r.Principal, users.Plain.Name)
			}
			v0After++
		}
	}
	t.Logf("kafka-python (SaslHandshake v0): %d handshakes, %d requests after them, %d raw SASL tokens", v0Handshakes, v0After, w.SASLTokens)
	if v0Handshakes == 0 || v0After == 0 || w.SASLTokens < int64(2*v0Handshakes) {
		t.Errorf("kafka-python (SaslHandshake v0): %d handshakes, %d requests after, %d raw tokens", v0Handshakes, v0After, w.SASLTokens)
	}
	// franz-go re-authenticated its connection (KIP-368) while producing
	// on it, and what it sent after that still carries the principal.
	handshakes := map[string]int{}
	after := 0
	for _, r := range reqs {
		if r.ClientID != "franz-reauth" {
			continue
		}
		switch {
		case r.API == "SASLHandshake":
			handshakes[r.Client]++
		case r.API == "Produce" && handshakes[r.Client] >= 2:
			after++
			if r.Principal != users.SCRAM.Name {
				t.Errorf("franz-reauth produce after re-authentication: principal %q", r.Principal)
			}
		}
	}
	t.Logf("franz-go (KIP-368): SaslHandshakes by connection %v, %d produce requests after a re-authentication", handshakes, after)
	if after == 0 {
		t.Errorf("no produce request after a re-authentication: handshakes by connection %v", handshakes)
	}
	if !principals[users.Plain.Name] || !principals[users.SCRAM.Name] || !mechanisms[lab.MechanismPlain] || !mechanisms[lab.MechanismSCRAM] {
		t.Errorf("principals %v, mechanisms %v: want %s and %s, %s and %s", principals, mechanisms, users.Plain.Name, users.SCRAM.Name, lab.MechanismPlain, lab.MechanismSCRAM)
	}

	// The CLI over the same captures: with the key log, without it, and
	// with a wrong one. The passwords appear in no output and no file.
	args := []string{"requests", "--format", "json", "--port", strconv.Itoa(sslPort), "--port", strconv.Itoa(saslPort)}
	withKeys, withKeysErr, code := runCLI(append(append(args, "--tls-keylog", keyLog), pcaps...))
	if code != 0 || !strings.Contains(withKeys, users.SCRAM.Name) {
		t.Errorf("requests --tls-keylog: exit %d, principal %s in the output: %v; stderr %s", code, users.SCRAM.Name, strings.Contains(withKeys, users.SCRAM.Name), withKeysErr)
	}
	noKeys, noKeysErr, code := runCLI(append(slices.Clone(args), pcaps...))
	// Each connection decrypted above is now a warning of its own (and
	// so are those that only shook hands: without keys that is not known).
	if warned := strings.Count(noKeysErr, "not decrypted (no-keys): no TLS key log given"); code != 0 || strings.TrimSpace(noKeys) != "" || warned < int(min(w.TLSDecrypted, 100)) {
		t.Errorf("requests without the key log: exit %d, %d bytes of output, %d connection warnings (want %d or more):\n%s",
			code, len(noKeys), warned, w.TLSDecrypted, firstLinesOf(noKeysErr, 8))
	}
	wrongLog := filepath.Join(dir, "wrong-keys.log")
	writeWrongKeyLog(t, keyLog, wrongLog)
	wrong, wrongErr, code := runCLI(append(append(args, "--tls-keylog", wrongLog), pcaps...))
	if code != 0 || strings.TrimSpace(wrong) != "" || !strings.Contains(wrongErr, "not decrypted (failed)") {
		t.Errorf("requests with a wrong key log: exit %d, %d bytes of output:\n%s", code, len(wrong), firstLinesOf(wrongErr, 8))
	}
	outputs := map[string]string{"output with keys": withKeys + withKeysErr, "output without keys": noKeys + noKeysErr, "output with wrong keys": wrong + wrongErr}
	for _, f := range append(pcaps, keyLog, b.RequestLogPath(), b.OutPath()) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		outputs[f] = string(data)
	}
	for what, text := range outputs {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("a SASL password is in %s", what)
			}
		}
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// pythonProduce produces n records with message ids through librdkafka
// (confluent-kafka for Python) over SASL_SSL as a SCRAM user. The password
// goes to the script by its environment, not its command line.
func pythonProduce(t *testing.T, ctx context.Context, python string, b *lab.Broker, u lab.User, topic string, n int) []string {
	t.Helper()
	const script = `
import os, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.username": os.environ["KSCOPE_USER"], "sasl.password": os.environ["KSCOPE_PASSWORD"],
    "ssl.ca.location": sys.argv[2], "client.id": "librdkafka-python", "linger.ms": 2, "acks": "all"})
failed = []
for i in range(int(sys.argv[4])):
    p.produce(sys.argv[3], b"v" * 200, headers=[("message-id", ("python-%d" % i).encode())],
              on_delivery=lambda err, msg: err and failed.append(err))
    p.poll(0)
left = p.flush(60)
if failed or left:
    sys.exit("delivery failed: %d errors, %d left" % (len(failed), left))
`
	cmd := exec.CommandContext(ctx, python, "-c", script, b.SASLSSLAddr(), b.CAFile(), topic, strconv.Itoa(n))
	cmd.Env = append(os.Environ(), "KSCOPE_USER="+u.Name, "KSCOPE_PASSWORD="+u.Password)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("confluent-kafka producer: %v: %s", err, out)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("python-%d", i)
	}
	return ids
}

// runCLI runs kscope in this process.
func runCLI(args []string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = cli.Main(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// writeWrongKeyLog writes every session's secrets under another session's
// client random: a key log that names the sessions but holds wrong keys.
func writeWrongKeyLog(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	var randoms []string
	var lines [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		lines = append(lines, f)
		if !slices.Contains(randoms, f[1]) {
			randoms = append(randoms, f[1])
		}
	}
	if len(randoms) < 2 {
		t.Fatalf("the key log has %d sessions", len(randoms))
	}
	var out bytes.Buffer
	for _, f := range lines {
		i := slices.Index(randoms, f[1])
		fmt.Fprintf(&out, "%s %s %s\n", f[0], randoms[(i+1)%len(randoms)], f[2])
	}
	if err := os.WriteFile(to, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func firstLinesOf(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// agreement counts the logged requests of client id whose decoded
// BrokerMs is within 1 ms of the broker's totalTimeMs, of those compared,
// and the median absolute difference.
func agreement(logged []requestlog.Entry, reqs []*event.Request, clientID string) (within, compared int, median float64) {
	byKey := index(reqs)
	var diffs []float64
	for _, e := range logged {
		r, ok := byKey.find(e.ClientAddr, e.CorrelationID, e.Time)
		if e.ClientID != clientID || !ok || !r.Answered || r.Partial {
			continue
		}
		d := math.Abs(r.BrokerMs - e.TotalTimeMs)
		diffs = append(diffs, d)
		if d <= 1 {
			within++
		}
	}
	if len(diffs) == 0 {
		return 0, 0, 0
	}
	slices.Sort(diffs)
	return within, len(diffs), diffs[len(diffs)/2]
}

// produceAlternating produces n records with message ids through each
// client (by client id), one record on each in turn, then reads each
// client's topic back; it returns each client's ids.
func produceAlternating(ctx context.Context, n int, clients map[string][]kgo.Opt) (map[string][]string, error) {
	names := slices.Sorted(maps.Keys(clients))
	cls := make([]*kgo.Client, len(names))
	for i, name := range names {
		cl, err := kgo.NewClient(append(clients[name], kgo.ClientID(name), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("topic-"+name),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		cls[i] = cl
	}
	ids := map[string][]string{}
	for i := range n {
		for j, cl := range cls {
			id := fmt.Sprintf("%s-%d", names[j], i)
			ids[names[j]] = append(ids[names[j]], id)
			rec := &kgo.Record{Topic: "topic-" + names[j], Value: []byte(strings.Repeat("v", 200)), Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte(id)}}}
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				return nil, fmt.Errorf("%s: %w", names[j], err)
			}
		}
	}
	for j, cl := range cls {
		for got := 0; got < n; {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("%s consumed %d of %d: %w", names[j], got, n, err)
			}
			got += fs.NumRecords()
		}
	}
	return ids, nil
}

// saslV0 runs kafka-python pinned to Kafka 0.10.0 against the SASL_SSL
// listener as the PLAIN user: it authenticates with SaslHandshake v0 and a
// raw token, then sends Metadata and Produce versions Kafka 4 no longer
// serves (so its send fails: that is not what is tested).
func saslV0(t *testing.T, ctx context.Context, python string, b *lab.Broker, u lab.User) {
	t.Helper()
	const script = `
import os, sys
from kafka import KafkaProducer
try:
    p = KafkaProducer(bootstrap_servers=sys.argv[1], security_protocol="SASL_SSL", sasl_mechanism="PLAIN",
        sasl_plain_username=os.environ["KSCOPE_USER"], sasl_plain_password=os.environ["KSCOPE_PASSWORD"],
        ssl_cafile=sys.argv[2], api_version=(0, 10, 0), client_id="kafka-python-v0",
        request_timeout_ms=3000, max_block_ms=3000)
    p.send("tls-v0", b"v").get(timeout=3)
except Exception as e:
    print("kafka-python:", type(e).__name__)
`
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, python, "-c", script, b.SASLSSLAddr(), b.CAFile())
	cmd.Env = append(os.Environ(), "KSCOPE_USER="+u.Name, "KSCOPE_PASSWORD="+u.Password)
	out, err := cmd.CombinedOutput()
	if err != nil && cctx.Err() == nil {
		t.Fatalf("kafka-python: %v: %s", err, out)
	}
}

// reauthenticate produces with franz-go as the SCRAM user, one record
// every 100 ms for d: longer than the broker's SASL session, so franz-go
// re-authenticates its connection (KIP-368) on the way.
func reauthenticate(t *testing.T, ctx context.Context, b *lab.Broker, auth sasl.Mechanism, d time.Duration) {
	t.Helper()
	tlsCfg, err := b.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.SASLSSLAddr()), kgo.DialTLSConfig(tlsCfg), kgo.SASL(auth),
		kgo.ClientID("franz-reauth"), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("tls-reauth"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("reauth")}).FirstErr(); err != nil {
			t.Fatalf("franz-go re-authenticating: %v", err)
		}
	}
}
