package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestServerPropertiesSecurity(t *testing.T) {
	sec := &nodeTLS{keyStore: "/tmp/b/tls/broker.p12", keyStorePass: "KSPW",
		shared: &sharedTLS{dir: "/tmp/b/tls", users: Users{Plain: User{Name: "kscope-plain", Mechanism: MechanismPlain, Password: "PPW"}}}}
	for _, tc := range []struct {
		advertised, host  string
		listen, advertise string
		extra             map[string]string
	}{
		{"", "", "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,SSL://127.0.0.1:9094,SASL_SSL://127.0.0.1:9095",
			"PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9094,SASL_SSL://127.0.0.1:9095", nil},
		{"10.1.2.1", "", "PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093,SSL://0.0.0.0:9094,SASL_SSL://0.0.0.0:9095",
			"PLAINTEXT://10.1.2.1:9092,SSL://10.1.2.1:9094,SASL_SSL://10.1.2.1:9095", nil},
		{"", "10.70.5.12", "PLAINTEXT://10.70.5.12:9092,CONTROLLER://10.70.5.12:9093,SSL://10.70.5.12:9094,SASL_SSL://10.70.5.12:9095",
			"PLAINTEXT://10.70.5.12:9092,SSL://10.70.5.12:9094,SASL_SSL://10.70.5.12:9095", map[string]string{"ssl.client.auth": "requested"}},
	} {
		cfg, err := BrokerConfig{Dir: "/tmp/b", AdvertisedHost: tc.advertised, Security: &SecurityConfig{}, ExtraProps: tc.extra}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		got := serverProperties(nodeSpec{cfg: cfg, id: 1, n: 1, version: KafkaVersion, port: 9092, cport: 9093, host: tc.host, ssl: 9094, sasl: 9095, tls: sec})
		want := []string{
			"listeners=" + tc.listen + "\n",
			"advertised.listeners=" + tc.advertise + "\n",
			"inter.broker.listener.name=PLAINTEXT\n",
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL\n",
			"ssl.keystore.type=PKCS12\n",
			"ssl.keystore.location=/tmp/b/tls/broker.p12\n",
			"ssl.keystore.password=KSPW\n",
			"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512\n",
			`listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_kscope-plain="PPW";` + "\n",
			"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n",
		}
		if tc.extra != nil {
			want = append(want, "ssl.client.auth=requested\n") // ExtraProps win
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("server.properties lacks %q:\n%s", w, got)
			}
		}
	}
	// Without Security nothing of it.
	cfg, _ := BrokerConfig{Dir: "/tmp/b"}.withDefaults()
	got := serverProperties(nodeSpec{cfg: cfg, id: 1, n: 1, version: KafkaVersion, port: 9092, cport: 9093})
	if strings.Contains(got, "SSL") || strings.Contains(got, "sasl") {
		t.Errorf("server.properties without Security:\n%s", got)
	}
}

func TestSecurityDefaults(t *testing.T) {
	sc := &SecurityConfig{SSLPort: 9300}
	cfg, err := BrokerConfig{Dir: "/tmp/b", Security: sc}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Security.Dir != "/tmp/b/tls" || cfg.Security.SSLPort != 9300 || sc.Dir != "" {
		t.Errorf("Security %+v (caller's %+v)", cfg.Security, sc)
	}
	for _, tc := range []struct {
		i         int
		sc        SecurityConfig
		netns     bool
		ssl, sasl int
		dir       string
	}{
		{0, SecurityConfig{}, false, 0, 0, "/c/tls"},
		{2, SecurityConfig{SSLPort: 9300, SASLSSLPort: 9400}, false, 9302, 9402, "/c/tls"},
		{2, SecurityConfig{}, true, NetnsSSLPort, NetnsSASLSSLPort, "/c/tls"},
		{1, SecurityConfig{SSLPort: 19094, Dir: "/x"}, true, 19094, NetnsSASLSSLPort, "/x"},
	} {
		got := nodeSecurity("/c", tc.i, tc.sc, tc.netns)
		if got.SSLPort != tc.ssl || got.SASLSSLPort != tc.sasl || got.Dir != tc.dir {
			t.Errorf("nodeSecurity(%d, %+v, netns %v) = %+v", tc.i, tc.sc, tc.netns, got)
		}
	}
}

func TestPickSecurePorts(t *testing.T) {
	cfgs := []BrokerConfig{{Security: &SecurityConfig{}}, {}, {Security: &SecurityConfig{}}}
	prev := []*state{nil, nil, nil}
	taken := []int{1, 2}
	sp, err := pickSecurePorts(cfgs, prev, taken)
	if err != nil {
		t.Fatal(err)
	}
	if sp[1] != (securePorts{}) {
		t.Errorf("node without Security got ports %+v", sp[1])
	}
	seen := slices.Clone(taken)
	for _, p := range []int{sp[0].ssl, sp[0].sasl, sp[2].ssl, sp[2].sasl} {
		if p == 0 || slices.Contains(seen, p) {
			t.Fatalf("ports %+v: zero or repeated", sp)
		}
		seen = append(seen, p)
	}
	// A restart keeps the last ports while they are free.
	free, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	prev = []*state{{SSLAddr: nodeAddr("127.0.0.1", free[0]), SASLSSLAddr: nodeAddr("127.0.0.1", free[1])}}
	sp, err = pickSecurePorts(cfgs[:1], prev, nil)
	if err != nil || sp[0] != (securePorts{free[0], free[1]}) {
		t.Errorf("restart: %+v, %v; want %v", sp, err, free)
	}
	// A configured port given to PLAINTEXT too.
	if _, err := pickSecurePorts([]BrokerConfig{{Security: &SecurityConfig{SSLPort: free[0]}}}, []*state{nil}, []int{free[0]}); err == nil {
		t.Error("SSL port shared with another listener: no error")
	}
}

func TestNetnsSecurePorts(t *testing.T) {
	cfgs := []BrokerConfig{{Security: &SecurityConfig{SSLPort: NetnsSSLPort, SASLSSLPort: NetnsSASLSSLPort}}, {}}
	sp, err := netnsSecurePorts(cfgs, []int{9092, 9092}, []int{9093, 9093})
	if err != nil || sp[0] != (securePorts{9094, 9095}) || sp[1] != (securePorts{}) {
		t.Errorf("%+v, %v", sp, err)
	}
	for _, sc := range []SecurityConfig{{SSLPort: 9093, SASLSSLPort: 9095}, {SSLPort: 9094, SASLSSLPort: 9094}, {SSLPort: 0, SASLSSLPort: 9095}} {
		if _, err := netnsSecurePorts([]BrokerConfig{{Security: &sc}}, []int{9092}, []int{9093}); err == nil {
			t.Errorf("%+v: no error", sc)
		}
	}
}

func TestSANExt(t *testing.T) {
	for _, tc := range []struct{ host, advertised, want string }{
		{"127.0.0.1", "", "san=ip:127.0.0.1,dns:localhost"},
		{"10.70.5.12", "", "san=ip:127.0.0.1,dns:localhost,ip:10.70.5.12"},
		{"127.0.0.1", "kafka.example", "san=ip:127.0.0.1,dns:localhost,dns:kafka.example"},
		{"127.0.0.1", "fd00::1", "san=ip:127.0.0.1,dns:localhost,ip:fd00::1"},
	} {
		if got := sanExt(tc.host, tc.advertised); got != tc.want {
			t.Errorf("sanExt(%q, %q) = %q, want %q", tc.host, tc.advertised, got, tc.want)
		}
	}
}

func TestClientPropertiesAndSecrets(t *testing.T) {
	dir := t.TempDir()
	users, err := ensureUsers(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ensureUsers(dir)
	if err != nil || again != users {
		t.Fatalf("users not kept: %v", err)
	}
	if len(users.Plain.Password) != 32 || users.Plain.Password == users.SCRAM.Password {
		t.Errorf("passwords of %d and %d characters, equal: %v", len(users.Plain.Password), len(users.SCRAM.Password), users.Plain.Password == users.SCRAM.Password)
	}
	for _, s := range []string{fmt.Sprint(users), fmt.Sprintf("%+v", users), fmt.Sprintf("%#v", users), users.SCRAM.String()} {
		if strings.Contains(s, users.Plain.Password) || strings.Contains(s, users.SCRAM.Password) {
			t.Errorf("printed users show a password: %s", s)
		}
	}
	pw, made, err := passwordFile(filepath.Join(dir, trustStorePassFile))
	if err != nil || !made {
		t.Fatal(err)
	}
	for _, f := range []string{UsersFile, trustStorePassFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f, st.Mode(), err)
		}
	}
	got, err := clientProperties(dir, []string{"127.0.0.1:1", "127.0.0.1:2"}, ClientSecurity{Mechanism: MechanismSCRAM, TLSVersion: TLSv12})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"bootstrap.servers=127.0.0.1:1,127.0.0.1:2\n",
		"security.protocol=SASL_SSL\n",
		"ssl.truststore.type=PKCS12\n",
		"ssl.truststore.location=" + filepath.Join(dir, TrustStoreFile) + "\n",
		"ssl.truststore.password=" + pw + "\n",
		"ssl.enabled.protocols=TLSv1.2\n",
		"ssl.protocol=TLSv1.2\n",
		"sasl.mechanism=SCRAM-SHA-512\n",
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="kscope-scram" password="` + users.SCRAM.Password + `";` + "\n",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("client properties lack %q:\n%s", w, got)
		}
	}
	got, err = clientProperties(dir, []string{"127.0.0.1:1"}, ClientSecurity{})
	if err != nil || !strings.Contains(got, "security.protocol=SSL\n") || strings.Contains(got, "sasl") || strings.Contains(got, "ssl.protocol") {
		t.Errorf("SSL properties: %v\n%s", err, got)
	}
	for _, cs := range []ClientSecurity{{Mechanism: "GSSAPI"}, {TLSVersion: "TLSv1.1"}} {
		if _, err := clientProperties(dir, nil, cs); err == nil {
			t.Errorf("%+v: no error", cs)
		}
	}
}

func TestRedactFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(p, []byte("bad [name=u,password=SECRET] here"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := redactFile(p, []User{{Password: "SECRET"}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "bad [name=u,password=<redacted>] here" {
		t.Errorf("redacted: %q", b)
	}
}

func TestCheckSecurityVersion(t *testing.T) {
	for v, ok := range map[string]bool{"3.4.1": false, "3.5.0": true, "3.9.1": true, "4.1.2": true} {
		if err := checkSecurityVersion(v); (err == nil) != ok {
			t.Errorf("%s: %v", v, err)
		}
	}
}
