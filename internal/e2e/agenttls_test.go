package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kscope-dev/kscope/internal/clients"
	"github.com/kscope-dev/kscope/internal/keylogagent"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// TestAgentTLS: `kscope agent --tls-keys attach` loads the key-log agent
// into the broker it traces and decodes its SSL and SASL_SSL listeners
// live: every produce request the clients sent is counted by client id,
// the TLS connections are counted decrypted, the key log is 0600 and the
// SASL password is in nothing the agent serves or writes.
func TestAgentTLS(t *testing.T) {
	labtest.RequireRoot(t)
	libs := labtest.RequireKafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if _, err := keylogagent.EnsureJar(ctx); err != nil {
		labtest.Unavailable(t, "the extract-tls-secrets agent jar: %v", err)
	}
	b := labtest.Broker(t, lab.BrokerConfig{LibsDir: libs, Security: &lab.SecurityConfig{}})
	users, err := b.Users()
	if err != nil {
		t.Fatal(err)
	}
	sslPort, saslPort := portOf(t, b.SSLAddr()), portOf(t, b.SASLSSLAddr())
	out := t.TempDir()
	a := startAgent(ctx, t, true, "--iface", "lo", "--port", strconv.Itoa(sslPort), "--port", strconv.Itoa(saslPort),
		"--pid", strconv.Itoa(b.PID()), "--log-dirs", strings.Join(b.LogDirs(), ","), "--out", out, "--slow", "1ms",
		"--tls-keys", "attach")
	keyLog, err := keylogagent.HostKeyLog(b.PID())
	if err != nil {
		t.Fatal(err)
	}
	// The agent says when the key-log agent is in the broker: clients
	// connect after that.
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(a.errOut(), "key-log agent loaded") {
		if time.Now().After(deadline) || strings.Contains(a.errOut(), "loading the key-log agent") {
			t.Fatalf("the key-log agent was not loaded: %s", a.errOut())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st, err := os.Stat(keyLog); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key log %v, %v: want mode 0600", st, err)
	}

	// A recording of the same broker at the same time: its attach finds
	// the agent in place (the same key log), and the recording keeps the
	// keys in its capture's secrets blocks and a copy of the key log.
	recDir := filepath.Join(t.TempDir(), "rec")
	rec := startCLI(ctx, t, "record: broker pid", "record", "--pid", strconv.Itoa(b.PID()), "--log-dirs", strings.Join(b.LogDirs(), ","),
		"--iface", "lo", "--port", strconv.Itoa(sslPort), "--port", strconv.Itoa(saslPort), "--out", recDir,
		"--pcap", "--tls-keys", "attach", "--sched=false", "--jvm-pauses=false")
	time.Sleep(time.Second) // the capture opens right after that line

	tlsCfg, err := b.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	tls12 := tlsCfg.Clone()
	tls12.MaxVersion = tls.VersionTLS12
	const n = 200
	producers := map[string][]kgo.Opt{
		"agent-tls13": {kgo.SeedBrokers(b.SSLAddr()), kgo.DialTLSConfig(tlsCfg)},
		"agent-scram-tls12": {kgo.SeedBrokers(b.SASLSSLAddr()), kgo.DialTLSConfig(tls12),
			kgo.SASL(scram.Auth{User: users.SCRAM.Name, Pass: users.SCRAM.Password}.AsSha512Mechanism())},
	}
	if _, err := produceAlternating(ctx, n, producers); err != nil {
		t.Fatal(err)
	}
	// Each client produced n records one request at a time.
	deadline = time.Now().Add(20 * time.Second)
	for {
		fams := a.scrape(t)
		done := true
		for name := range producers {
			if metricSum(fams, "kscope_requests_total", map[string]string{"client_id": name, "api": "Produce"}) < n {
				done = false
			}
		}
		decrypted := metricSum(fams, "kscope_agent_tls_connections_total", map[string]string{"outcome": "decrypted"})
		undecrypted := metricSum(fams, "kscope_agent_tls_connections_total", map[string]string{"outcome": "no_keys"}) +
			metricSum(fams, "kscope_agent_tls_connections_total", map[string]string{"outcome": "failed"})
		if done && decrypted > 0 {
			if undecrypted != 0 {
				t.Errorf("%v TLS connections not decrypted", undecrypted)
			}
			break
		}
		if time.Now().After(deadline) {
			for name := range producers {
				t.Logf("%s: %v produce requests counted", name, metricSum(fams, "kscope_requests_total", map[string]string{"client_id": name, "api": "Produce"}))
			}
			for _, o := range []string{"decrypted", "handshake_only", "no_keys", "failed", "lost"} {
				t.Logf("TLS connections %s: %v", o, metricSum(fams, "kscope_agent_tls_connections_total", map[string]string{"outcome": o}))
			}
			t.Fatalf("TLS connections decrypted %v, not %v; %v connections tracked; agent: %s", decrypted, undecrypted,
				metricSum(fams, "kscope_agent_connections", nil), a.errOut())
		}
		time.Sleep(time.Second)
	}
	if s := a.health(t); s.Status != "ok" {
		t.Errorf("/healthz %+v", s)
	}
	time.Sleep(time.Second)
	if err := rec.stop(t, syscall.SIGINT); err != nil {
		t.Fatalf("record: %v: %s", err, rec.errOut())
	}
	checkTLSRecording(t, recDir, sslPort, saslPort, len(producers)*n)
	t.Run("clients", func(t *testing.T) {
		principals := map[string]string{"agent-tls13": "", "agent-scram-tls12": users.SCRAM.Name}
		checkClientsRecording(t, recDir, principals, n)
		var live clients.Report
		if err := json.Unmarshal([]byte(httpGet(t, a.base+"/clients")), &live); err != nil {
			t.Fatalf("/clients: %v", err)
		}
		checkClientsProduced(t, "the agent's /clients", &live, principals, n)
	})
	if t.Failed() {
		t.Logf("record: %s", rec.errOut())
		keepOnFailure(t, filepath.Join(recDir, recording.RequestsFile))
		keepOnFailure(t, filepath.Join(recDir, recording.CaptureFile))
	}
	// The password is in nothing the agent serves or wrote.
	texts := []string{a.errOut()}
	for _, p := range []string{"/metrics", "/healthz", "/clients"} {
		texts = append(texts, httpGet(t, a.base+p))
	}
	for _, dir := range []string{out, recDir} {
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				data, _ := os.ReadFile(path)
				texts = append(texts, string(data))
			}
			return nil
		})
	}
	for _, text := range texts {
		if strings.Contains(text, users.SCRAM.Password) {
			t.Fatal("the SCRAM password is in the agent's output or files")
		}
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// checkTLSRecording: a recording made with --tls-keys attach --pcap has
// its produce requests decoded live, a key log copy of mode 0600, and a
// capture that decodes on its own (its Decryption Secrets Blocks), with
// kscope and with tshark.
func checkTLSRecording(t *testing.T, dir string, sslPort, saslPort, produces int) {
	t.Helper()
	if st, err := os.Stat(filepath.Join(dir, recording.TLSKeyLogFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the recording's key log: %v, %v; want mode 0600", st, err)
	}
	live := 0
	data, err := os.ReadFile(filepath.Join(dir, recording.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"api":"Produce"`) && strings.Contains(line, `"client_id":"agent-`) {
			live++
		}
	}
	pcap := filepath.Join(dir, recording.CaptureFile)
	out, errOut, code := runCLI([]string{"requests", "--format", "json", "--port", strconv.Itoa(sslPort), "--port", strconv.Itoa(saslPort), pcap})
	fromPcap := strings.Count(out, `"api":"Produce"`)
	t.Logf("recording: %d produce requests decoded live, %d from its capture alone (of %d sent)", live, fromPcap, produces)
	// A connection the clients opened before the capture did is not
	// decrypted, and says so; any other reason is a failure.
	for _, line := range strings.Split(errOut, "\n") {
		if strings.Contains(line, "warning: TLS connection") && !strings.Contains(line, "began after") {
			t.Errorf("recording's capture: %s", line)
		}
	}
	if code != 0 || live < produces || fromPcap < produces {
		t.Errorf("recording: exit %d, %d produce requests live, %d from the capture, want %d; %s", code, live, fromPcap, produces, firstLinesOf(errOut, 6))
	}
	// tshark reads the secrets blocks too (no key log given to it), in its
	// one pass: the format is Wireshark's, and record put every secret at
	// the capture's start when it ended.
	tsharkProduces := 0
	for _, port := range []int{sslPort, saslPort} {
		p := strconv.Itoa(port)
		out, err := exec.Command("tshark", "-n", "-r", pcap, "-d", "tcp.port=="+p+",tls", "-d", "tls.port=="+p+",kafka",
			"-Y", "kafka.request_key == 0", "-T", "fields", "-e", "kafka.correlation_id").Output()
		if err != nil {
			t.Fatalf("tshark: %v", err)
		}
		tsharkProduces += len(strings.Fields(string(out)))
	}
	t.Logf("tshark, with only the capture's secrets blocks: %d produce requests", tsharkProduces)
	if tsharkProduces < produces {
		t.Errorf("tshark decrypted %d produce requests from the recording's capture, want %d", tsharkProduces, produces)
	}
}
