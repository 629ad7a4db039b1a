package lab_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/testkit/traffic"
)

// startSecure starts a broker with Security in dir and stops it in
// t.Cleanup, logging broker.out when the test failed.
func startSecure(ctx context.Context, t *testing.T, dir, libs string) *lab.Broker {
	t.Helper()
	start := time.Now()
	b, err := lab.StartBroker(ctx, lab.BrokerConfig{Dir: dir, LibsDir: libs, Security: &lab.SecurityConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("broker %s, SSL %s, SASL_SSL %s started in %v", b.Addr(), b.SSLAddr(), b.SASLSSLAddr(), time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Errorf("stop broker: %v", err)
		}
		if t.Failed() {
			t.Logf("tail of %s:\n%s", b.OutPath(), tailOf(b.OutPath(), 40))
		}
	})
	return b
}

// TestBrokerSecurity runs one broker with SSL and SASL_SSL listeners:
// franz-go produces and consumes over SSL, SASL_SSL with PLAIN and with
// SCRAM-SHA-512 (pinned to TLS 1.2), the Java console producer and
// consumer use the written client properties, wrong passwords are
// refused, the secrets are only in 0600 files, and a restart keeps the
// certificates and takes new passwords when users.json was removed.
func TestBrokerSecurity(t *testing.T) {
	libs := labtest.RequireKafka(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	b := startSecure(ctx, t, dir, libs)
	users, err := b.Users()
	if err != nil {
		t.Fatal(err)
	}
	if users.Plain.Name != "kscope-plain" || users.SCRAM.Name != "kscope-scram" || users.Plain.Password == users.SCRAM.Password {
		t.Fatalf("users %v", users)
	}
	if s := fmt.Sprintf("%v %+v %#v", users, users, users); strings.Contains(s, users.Plain.Password) || strings.Contains(s, users.SCRAM.Password) {
		t.Errorf("printing the users shows a password: %s", s)
	}
	tlsCfg, err := b.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	plainMech := plain.Auth{User: users.Plain.Name, Pass: users.Plain.Password}.AsMechanism()
	scramMech := scram.Auth{User: users.SCRAM.Name, Pass: users.SCRAM.Password}.AsSha512Mechanism()

	t.Run("files", func(t *testing.T) { checkSecurityFiles(t, b, users) })
	t.Run("plaintext", func(t *testing.T) {
		produceConsume(ctx, t, "plaintext", kgo.SeedBrokers(b.Addr()))
	})
	t.Run("ssl", func(t *testing.T) {
		produceConsume(ctx, t, "ssl", kgo.SeedBrokers(b.SSLAddr()), kgo.DialTLSConfig(tlsCfg))
	})
	t.Run("sasl-plain", func(t *testing.T) {
		produceConsume(ctx, t, "sasl-plain", kgo.SeedBrokers(b.SASLSSLAddr()), kgo.DialTLSConfig(tlsCfg), kgo.SASL(plainMech))
	})
	t.Run("sasl-scram-tls12", func(t *testing.T) {
		dial, versions := recordingDialer(tlsCfg, tls.VersionTLS12)
		produceConsume(ctx, t, "sasl-scram", kgo.SeedBrokers(b.SASLSSLAddr()), kgo.Dialer(dial), kgo.SASL(scramMech))
		if v := versions(); len(v) == 0 || slices.ContainsFunc(v, func(s string) bool { return s != "TLS 1.2" }) {
			t.Errorf("negotiated %q, want TLS 1.2 only", v)
		}
	})
	t.Run("sasl-scram-tls13", func(t *testing.T) {
		dial, versions := recordingDialer(tlsCfg, 0)
		cl := newClient(t, kgo.SeedBrokers(b.SASLSSLAddr()), kgo.Dialer(dial), kgo.SASL(scramMech))
		if err := cl.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		if v := versions(); !slices.Contains(v, "TLS 1.3") {
			t.Errorf("negotiated %q, want TLS 1.3", v)
		}
	})
	t.Run("wrong-password", func(t *testing.T) {
		for _, m := range []sasl.Mechanism{
			plain.Auth{User: users.Plain.Name, Pass: users.Plain.Password + "x"}.AsMechanism(),
			scram.Auth{User: users.SCRAM.Name, Pass: users.SCRAM.Password + "x"}.AsSha512Mechanism(),
			plain.Auth{User: users.SCRAM.Name, Pass: users.SCRAM.Password}.AsMechanism(), // a SCRAM user is no PLAIN user
		} {
			requireAuthFailure(ctx, t, b.SASLSSLAddr(), tlsCfg, m)
		}
	})
	t.Run("untrusted", func(t *testing.T) {
		cl := newClient(t, kgo.SeedBrokers(b.SSLAddr()), kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}))
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := cl.Ping(pctx); err == nil {
			t.Error("a client without the lab's CA connected over SSL")
		}
	})
	t.Run("java", func(t *testing.T) {
		const topic = "java-scram"
		lines := []string{"java 0", "java 1", "java 2"}
		if err := traffic.JavaConsoleProducer(ctx, libs, b.SASLSSLAddr(), topic, lines, b.ClientPropertiesFile(lab.MechanismSCRAM)); err != nil {
			t.Fatal(err)
		}
		got := consume(ctx, t, topic, len(lines), kgo.SeedBrokers(b.SASLSSLAddr()), kgo.DialTLSConfig(tlsCfg), kgo.SASL(scramMech))
		if strings.Join(got, ",") != strings.Join(lines, ",") {
			t.Errorf("consumed %q, want %q", got, lines)
		}
		// The PLAIN user, pinned to TLS 1.2, from a file of our own.
		props := filepath.Join(t.TempDir(), "plain-tls12.properties")
		if err := b.WriteClientProperties(props, lab.ClientSecurity{Mechanism: lab.MechanismPlain, TLSVersion: lab.TLSv12}); err != nil {
			t.Fatal(err)
		}
		requireMode(t, props, 0o600)
		if err := traffic.JavaConsoleConsumerConfig(ctx, libs, b.SASLSSLAddr(), topic, "java-plain", len(lines), props); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no-secrets-in-logs", func(t *testing.T) { requireNoSecrets(t, dir, users) })

	// A restart: the certificates stay, users.json removed makes new
	// passwords, which the broker takes (the SCRAM one through the
	// metadata, the storage being formatted already).
	ca, err := os.ReadFile(b.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	ks, err := os.ReadFile(filepath.Join(dir, "tls", "broker.p12"))
	if err != nil {
		t.Fatal(err)
	}
	sslAddr := b.SSLAddr()
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "tls", lab.UsersFile)); err != nil {
		t.Fatal(err)
	}
	b2 := startSecure(ctx, t, dir, libs)
	users2, err := b2.Users()
	if err != nil {
		t.Fatal(err)
	}
	if users2.SCRAM.Password == users.SCRAM.Password || users2.Plain.Password == users.Plain.Password {
		t.Error("users.json removed, yet the passwords are the old ones")
	}
	ca2, _ := os.ReadFile(b2.CAFile())
	ks2, _ := os.ReadFile(filepath.Join(dir, "tls", "broker.p12"))
	if !bytes.Equal(ca, ca2) || !bytes.Equal(ks, ks2) {
		t.Error("a restart made the CA or the key store again")
	}
	if b2.SSLAddr() != sslAddr {
		t.Logf("SSL moved from %s to %s (the port was taken meanwhile?)", sslAddr, b2.SSLAddr())
	}
	newSCRAM := scram.Auth{User: users2.SCRAM.Name, Pass: users2.SCRAM.Password}.AsSha512Mechanism()
	produceConsume(ctx, t, "restarted-scram", kgo.SeedBrokers(b2.SASLSSLAddr()), kgo.DialTLSConfig(tlsCfg), kgo.SASL(newSCRAM))
	newPlain := plain.Auth{User: users2.Plain.Name, Pass: users2.Plain.Password}.AsMechanism()
	produceConsume(ctx, t, "restarted-plain", kgo.SeedBrokers(b2.SASLSSLAddr()), kgo.DialTLSConfig(tlsCfg), kgo.SASL(newPlain))
	requireAuthFailure(ctx, t, b2.SASLSSLAddr(), tlsCfg, scramMech)
	requireAuthFailure(ctx, t, b2.SASLSSLAddr(), tlsCfg, plainMech)
	checkSecurityFiles(t, b2, users2)
}

// checkSecurityFiles checks the files a start with Security writes and
// their modes: secrets 0600, the client properties as documented.
func checkSecurityFiles(t *testing.T, b *lab.Broker, users lab.Users) {
	t.Helper()
	tlsDir := filepath.Join(b.Dir(), "tls")
	if b.SecurityDir() != tlsDir || b.CAFile() != filepath.Join(tlsDir, "ca.pem") {
		t.Errorf("security dir %q, CA %q", b.SecurityDir(), b.CAFile())
	}
	for _, f := range []string{"ca.p12", "ca.password", "truststore.password", "users.json", "broker.p12", "broker.password",
		"client-ssl.properties", "client-sasl-plain.properties", "client-sasl-scram.properties"} {
		requireMode(t, filepath.Join(tlsDir, f), 0o600)
	}
	requireMode(t, filepath.Join(b.Dir(), lab.PropertiesFile), 0o600)
	for _, tc := range []struct {
		mech, file string
		want       []string
	}{
		{"", "client-ssl.properties", []string{"security.protocol=SSL\n", "bootstrap.servers=" + b.SSLAddr() + "\n"}},
		{lab.MechanismPlain, "client-sasl-plain.properties", []string{"security.protocol=SASL_SSL\n", "sasl.mechanism=PLAIN\n",
			`username="kscope-plain" password="` + users.Plain.Password + `";`, "bootstrap.servers=" + b.SASLSSLAddr() + "\n"}},
		{lab.MechanismSCRAM, "client-sasl-scram.properties", []string{"security.protocol=SASL_SSL\n", "sasl.mechanism=SCRAM-SHA-512\n",
			"org.apache.kafka.common.security.scram.ScramLoginModule required", `password="` + users.SCRAM.Password + `";`}},
	} {
		p := b.ClientPropertiesFile(tc.mech)
		if p != filepath.Join(tlsDir, tc.file) {
			t.Errorf("ClientPropertiesFile(%q) = %q", tc.mech, p)
			continue
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, w := range append(tc.want, "ssl.truststore.type=PKCS12\n", "ssl.truststore.location="+filepath.Join(tlsDir, "truststore.p12")+"\n") {
			if !strings.Contains(string(got), w) {
				t.Errorf("%s lacks %q", tc.file, w)
			}
		}
	}
	p, err := b.ClientProperties(lab.ClientSecurity{TLSVersion: lab.TLSv12})
	if err != nil || !strings.Contains(p, "ssl.enabled.protocols=TLSv1.2\n") || !strings.Contains(p, "ssl.protocol=TLSv1.2\n") {
		t.Errorf("TLS 1.2 properties: %v\n%s", err, p)
	}
	if _, err := b.ClientProperties(lab.ClientSecurity{Mechanism: "GSSAPI"}); err == nil {
		t.Error("ClientProperties took mechanism GSSAPI")
	}
}

// requireNoSecrets fails when a password shows in a file of dir that is
// not private (mode 0600): the logs, the state, format.out.
func requireNoSecrets(t *testing.T, dir string, users lab.Users) {
	t.Helper()
	secrets := []string{users.Plain.Password, users.SCRAM.Password}
	for _, f := range []string{"ca.password", "truststore.password", "broker.password"} {
		b, err := os.ReadFile(filepath.Join(dir, "tls", f))
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, strings.TrimSpace(string(b)))
	}
	checked := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm() == 0o600 || info.Size() > 64<<20 {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s (mode %v) holds a password", path, info.Mode().Perm())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 3 {
		t.Errorf("checked only %d files", checked)
	}
}

func requireMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Error(err)
		return
	}
	if st.Mode().Perm() != want {
		t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), want)
	}
}

// requireAuthFailure fails unless the SASL_SSL listener at addr refuses
// mechanism m with SASL_AUTHENTICATION_FAILED.
func requireAuthFailure(ctx context.Context, t *testing.T, addr string, tlsCfg *tls.Config, m sasl.Mechanism) {
	t.Helper()
	cl := newClient(t, kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg), kgo.SASL(m))
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := cl.Ping(pctx)
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("%s login with a wrong password: %v, want %v", m.Name(), err, kerr.SaslAuthenticationFailed)
	}
}

// recordingDialer dials TLS with cfg (capped at maxVersion unless 0)
// and returns the dial function and a function listing the versions
// negotiated so far ("TLS 1.2").
func recordingDialer(cfg *tls.Config, maxVersion uint16) (func(context.Context, string, string) (net.Conn, error), func() []string) {
	var mu sync.Mutex
	var versions []string
	dial := func(ctx context.Context, network, host string) (net.Conn, error) {
		c := cfg.Clone()
		c.MaxVersion = maxVersion
		if h, _, err := net.SplitHostPort(host); err == nil {
			c.ServerName = h
		}
		conn, err := (&tls.Dialer{Config: c}).DialContext(ctx, network, host)
		if err == nil {
			mu.Lock()
			versions = append(versions, tls.VersionName(conn.(*tls.Conn).ConnectionState().Version))
			mu.Unlock()
		}
		return conn, err
	}
	return dial, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(versions)
	}
}

func newClient(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	// A short metadata age: a consumer started right after the topic was
	// made would otherwise wait 5 s to see it.
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.ClientID("kscope-security-test"), kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceConsume produces 10 records to topic through a client with opts
// and reads them back through another.
func produceConsume(ctx context.Context, t *testing.T, topic string, opts ...kgo.Opt) {
	t.Helper()
	const n = 10
	cl := newClient(t, append(opts, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())...)
	recs := make([]*kgo.Record, n)
	want := make([]string, n)
	for i := range recs {
		want[i] = topic + " " + strconv.Itoa(i)
		recs[i] = &kgo.Record{Value: []byte(want[i])}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	if got := consume(ctx, t, topic, n, opts...); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("consumed %q, want %q", got, want)
	}
}

// consume reads n record values of topic from the start.
func consume(ctx context.Context, t *testing.T, topic string, n int, opts ...kgo.Opt) []string {
	t.Helper()
	cl := newClient(t, append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume %s: %d of %d records: %v", topic, len(got), n, err)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("consume %s: %v", topic, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestClusterNetnsSecurity runs two nodes, each in its own network
// namespace, with SSL and SASL_SSL listeners on ports 9094 and 9095 at
// their own addresses: one CA for both, each node's certificate naming
// its address, and records replicated to both nodes produced and
// consumed over SASL_SSL with SCRAM-SHA-512 and over SSL from the root
// namespace. The state files record the listeners.
func TestClusterNetnsSecurity(t *testing.T) {
	requireIsolation(t)
	libs := labtest.RequireKafka(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c := startIsolated(ctx, t, lab.ClusterConfig{Dir: dir, Brokers: 2, LibsDir: libs, Netns: true, Security: &lab.SecurityConfig{}})
	nodes := c.Brokers()
	tlsCfg, err := nodes[0].TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range nodes {
		if b.SSLAddr() != net.JoinHostPort(b.IP(), "9094") || b.SASLSSLAddr() != net.JoinHostPort(b.IP(), "9095") {
			t.Errorf("node %d: SSL %s, SASL_SSL %s", b.NodeID(), b.SSLAddr(), b.SASLSSLAddr())
		}
		if b.CAFile() != filepath.Join(dir, "tls", "ca.pem") {
			t.Errorf("node %d: CA %s", b.NodeID(), b.CAFile())
		}
		requireMode(t, filepath.Join(b.Dir(), "tls", "broker.p12"), 0o600)
		// The node's certificate, for its own address, from the one CA.
		conn, err := (&tls.Dialer{Config: tlsCfg}).DialContext(ctx, "tcp", b.SSLAddr())
		if err != nil {
			t.Errorf("node %d: TLS to %s: %v", b.NodeID(), b.SSLAddr(), err)
			continue
		}
		conn.Close()
	}
	if _, err := os.Stat(filepath.Join(nodes[0].Dir(), "tls", "ca.pem")); !os.IsNotExist(err) {
		t.Errorf("a CA in node 1's dir: %v", err)
	}
	rec, err := lab.RecordedClusterConfig(dir)
	if err != nil || rec.Security == nil || rec.Security.Dir != filepath.Join(dir, "tls") {
		t.Errorf("recorded config %+v, %v", rec, err)
	}
	users, err := nodes[1].Users()
	if err != nil {
		t.Fatal(err)
	}
	props, err := os.ReadFile(nodes[0].ClientPropertiesFile(lab.MechanismSCRAM))
	if err != nil || !strings.Contains(string(props), "bootstrap.servers="+c.SASLSSLBootstrap()+"\n") {
		t.Errorf("client properties (%v) lack bootstrap.servers=%s", err, c.SASLSSLBootstrap())
	}
	scramMech := scram.Auth{User: users.SCRAM.Name, Pass: users.SCRAM.Password}.AsSha512Mechanism()
	produceConsume(ctx, t, "netns-scram", kgo.SeedBrokers(strings.Split(c.SASLSSLBootstrap(), ",")...), kgo.DialTLSConfig(tlsCfg), kgo.SASL(scramMech))
	produceConsume(ctx, t, "netns-ssl", kgo.SeedBrokers(strings.Split(c.SSLBootstrap(), ",")...), kgo.DialTLSConfig(tlsCfg))
	for _, b := range nodes {
		requireAuthFailure(ctx, t, b.SASLSSLAddr(), tlsCfg, scram.Auth{User: users.SCRAM.Name, Pass: "wrong"}.AsSha512Mechanism())
	}
}
