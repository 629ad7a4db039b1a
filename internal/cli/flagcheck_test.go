package cli

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestFlagRules: each shared rule's limits, one row per value on either
// side of them (NaN and the infinities for the floats).
func TestFlagRules(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name string
		err  error
		want string // "" : accepted; else a substring of the error
	}{
		{"nonNegative 0", nonNegative(0), ""},
		{"nonNegative -1ns", nonNegative(-time.Nanosecond), "must not be negative"},
		{"nonNegative NaN", nonNegative(nan), "must not be negative"},
		{"positive 1", positive(1), ""},
		{"positive 0", positive(0), "must be positive"},
		{"positive -3", positive(-3), "must be positive"},
		{"positive NaN", positive(nan), "must be positive"},
		{"atLeast 100ms", atLeast(100 * time.Millisecond)(100 * time.Millisecond), ""},
		{"atLeast 99ms", atLeast(100 * time.Millisecond)(99 * time.Millisecond), "at least 100ms"},
		{"between low", between(1024, math.MaxInt32)(1024), ""},
		{"between below", between(1024, math.MaxInt32)(1023), "want 1024 to 2147483647"},
		{"between above", between(0, 10)(11), "want 0 to 10"},
		{"percentile 99.9", percentile(99.9), ""},
		{"percentile 0", percentile(0), "want a percentile"},
		{"percentile 100", percentile(100), "want a percentile"},
		{"percentile -1", percentile(-1), "want a percentile"},
		{"percentile NaN", percentile(nan), "want a percentile"},
		{"percentile Inf", percentile(inf), "want a percentile"},
		{"share 1", share(1), ""},
		{"share 0.01", share(0.01), ""},
		{"share 0", share(0), "want a fraction"},
		{"share 1.5", share(1.5), "want a fraction"},
		{"share NaN", share(nan), "want a fraction"},
		{"share -Inf", share(-inf), "want a fraction"},
		{"level 0.05", level(0.05), ""},
		{"level 1", level(1), "want a level"},
		{"level NaN", level(nan), "want a level"},
		{"oneOf table", oneOf("table", "json", "csv")("table"), ""},
		{"oneOf xml", oneOf("table", "json", "csv")("xml"), "want table, json or csv"},
		{"oneOf case", oneOf("table", "json")("JSON"), "want table or json"},
		{"tcpPort 1", tcpPort(1), ""},
		{"tcpPort 65535", tcpPort(65535), ""},
		{"tcpPort 0", tcpPort(0), "0 is not a TCP port"},
		{"tcpPort 65536", tcpPort(65536), "65536 is not a TCP port"},
		{"portOrAny 0", portOrAny(0), ""},
		{"portOrAny -1", portOrAny(-1), "-1 is not a TCP port"},
		{"portOrAny 70000", portOrAny(70000), "70000 is not a TCP port"},
		{"notEmpty a", notEmpty("a"), ""},
		{"notEmpty blank", notEmpty(" "), "an empty name"},
		{"each ok", each(tcpPort)([]uint{9092, 9093}), ""},
		{"each one bad", each(tcpPort)([]uint{9092, 0}), "0 is not a TCP port"},
		{"optional empty", optional(oneOf("ext4", "xfs"))(""), ""},
		{"optional bad", optional(oneOf("ext4", "xfs"))("zfs"), "want ext4 or xfs"},
		{"hostPort host:port", hostPort("kafka-1:9092"), ""},
		{"hostPort host", hostPort("kafka-1"), ""},
		{"hostPort ipv6", hostPort("[::1]:9092"), ""},
		{"hostPort bad port", hostPort("kafka-1:x"), `"x" is not a TCP port`},
		{"hostPort port 0", hostPort("kafka-1:0"), `"0" is not a TCP port`},
		{"hostPort no host", hostPort(":9092"), "want HOST:PORT"},
		{"hostPort empty port", hostPort("kafka-1:"), `"" is not a TCP port`},
		{"listenAddr :0", listenAddr(":0"), ""},
		{"listenAddr host:port", listenAddr("127.0.0.1:9464"), ""},
		{"listenAddr no port", listenAddr("127.0.0.1"), "want [HOST]:PORT"},
		{"listenAddr port", listenAddr(":99999"), `"99999" is not a TCP port`},
		{"pidOr 42", pidOr("auto")("42"), ""},
		{"pidOr auto", pidOr("auto")("auto"), ""},
		{"pidOr none", pidOr("auto")("none"), "want a process id or auto"},
		{"pidOr 0", pidOr("auto", "none")("0"), "want a process id or auto or none"},
		{"pidOr -5", pidOr("auto")("-5"), "want a process id or auto"},
		{"knownAPI produce", knownAPI("produce"), ""},
		{"knownAPI 18", knownAPI("18"), ""},
		{"knownAPI typo", knownAPI("prodcue"), `unknown API "prodcue": did you mean produce?`},
		{"knownAPI 999", knownAPI("999"), "unknown API key 999"},
		{"slowAPIs all", slowAPIs([]string{"all"}), ""},
		{"slowAPIs all and more", slowAPIs([]string{"all", "fetch"}), "all goes alone"},
		{"slowAPIs typo", slowAPIs([]string{"Fetch", "prodce"}), "did you mean produce?"},
		{"otlpEndpoint none", otlpEndpoint(""), ""},
		{"otlpEndpoint host:port", otlpEndpoint("collector:4318"), ""},
		{"otlpEndpoint url", otlpEndpoint("https://collector:4318"), ""},
		{"otlpEndpoint no port", otlpEndpoint("collector"), "want HOST:PORT"},
		{"otlpEndpoint scheme", otlpEndpoint("ftp://collector"), "want HOST:PORT"},
		{"otlpEndpoint no host", otlpEndpoint("http://"), "want HOST:PORT"},
		{"requestID", requestID("40000/100"), ""},
		{"requestID bad", requestID("nocorr"), "nocorr"},
		{"connPorts", connPorts([]uint{9092}), ""},
		{"connPorts 0", connPorts([]uint{0}), "0 is not a TCP port"},
		{"functionMode", functionMode("sometimes"), "want off, auto or on"},
		{"flameFile svg", flameFile("f.SVG"), ""},
		{"flameFile png", flameFile("f.png"), "FILE.svg or FILE.html"},
		{"tlsKeysWay attach", tlsKeysWay("attach"), ""},
		{"tlsKeysWay other", tlsKeysWay("inject"), "the only way is attach"},
		{"kafkaReleases two", kafkaReleases("3.9.1,4.1.1"), ""},
		{"kafkaReleases one", kafkaReleases("3.9.1"), "at least two releases"},
		{"kafkaReleases old", kafkaReleases("2.8.0,3.9.1"), "too old"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			switch {
			case c.want == "" && c.err != nil:
				t.Fatalf("refused: %v", c.err)
			case c.want != "" && (c.err == nil || !strings.Contains(c.err.Error(), c.want)):
				t.Fatalf("error %v, want one containing %q", c.err, c.want)
			}
		})
	}
}

// TestCheckNamesFlagAndValue: a rule's refusal is a flag parsing error
// that names the flag and the value as given, and leaves the flag's help
// and default alone.
func TestCheckNamesFlagAndValue(t *testing.T) {
	f := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var share01 float64
	f.Float64Var(&share01, "share", 0.5, "usage")
	check(f, "share", &share01, share)
	err := f.Parse([]string{"--share", "NaN"})
	if err == nil || !strings.Contains(err.Error(), `invalid argument "NaN" for "--share" flag: want a fraction`) {
		t.Fatalf("error %v", err)
	}
	if fl := f.Lookup("share"); fl.DefValue != "0.5" || fl.Value.Type() != "float64" {
		t.Errorf("default %q, type %q", fl.DefValue, fl.Value.Type())
	}
	if err := f.Parse([]string{"--share", "0.25"}); err != nil || share01 != 0.25 {
		t.Errorf("--share 0.25: %v, %v", share01, err)
	}
}
