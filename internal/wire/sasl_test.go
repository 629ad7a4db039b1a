package wire

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/event"
)

const (
	testPassword = "hunter2-never-printed"
	testProof    = "cHJvb2YtbmV2ZXItcHJpbnRlZA=="
)

func handshake(mechanism string) *kmsg.SASLHandshakeRequest {
	r := kmsg.NewPtrSASLHandshakeRequest()
	r.Mechanism = mechanism
	return r
}

func authenticate(token string) *kmsg.SASLAuthenticateRequest {
	r := kmsg.NewPtrSASLAuthenticateRequest()
	r.SASLAuthBytes = []byte(token)
	return r
}

func authenticated(token string, code int16) *kmsg.SASLAuthenticateResponse {
	r := kmsg.NewPtrSASLAuthenticateResponse()
	r.SASLAuthBytes, r.ErrorCode = []byte(token), code
	return r
}

// raw is a SASL token framed by its size only (after SaslHandshake v0).
func raw(token string) []byte { return append(kbin.AppendInt32(nil, int32(len(token))), token...) }

// exchange is one client frame and the broker's answer to it.
type exchange struct{ req, resp []byte }

func runExchanges(t *testing.T, xs []exchange) ([]*event.Request, Stats) {
	t.Helper()
	c := newConversation(40200)
	c.handshake()
	for _, x := range xs {
		c.send(true, x.req, 700, time.Millisecond)
		c.now = c.now.Add(3 * time.Millisecond)
		c.send(false, x.resp, 700, time.Millisecond)
	}
	got, st := run(c.segs)
	// The secrets must not be in anything the decoder emits.
	for _, r := range got {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), testPassword) || strings.Contains(string(b), testProof) || strings.Contains(string(b), "r=fyko") {
			t.Fatalf("a secret in the output: %s", b)
		}
	}
	return got, st
}

func TestSASL(t *testing.T) {
	scramFirst, scramFinal := "n,,n=al=2Cice,r=fyko+d2lbbFgONRv9qkxdawL", "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p="+testProof
	serverFirst, serverFinal := "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096", "v=rmF9pqV8S7suAoZWja4dJRkFsKQ="
	produce := func(corr int32) exchange {
		return exchange{requestFrame(produceRequest("t", 0, -1, "m"), 9, corr, "app"), responseFrame(produceResponse("t", 0), 9, corr)}
	}
	tests := []struct {
		name string
		xs   []exchange
		// want: API, mechanism, principal of each event; tokens: raw ones
		want   [][3]string
		tokens int64
	}{
		{"SCRAM with SaslAuthenticate", []exchange{
			{requestFrame(handshake("SCRAM-SHA-512"), 1, 1, "app"), responseFrame(kmsg.NewPtrSASLHandshakeResponse(), 1, 1)},
			{requestFrame(authenticate(scramFirst), 2, 2, "app"), responseFrame(authenticated(serverFirst, 0), 2, 2)},
			{requestFrame(authenticate(scramFinal), 2, 3, "app"), responseFrame(authenticated(serverFinal, 0), 2, 3)},
			produce(4),
		}, [][3]string{{"SASLHandshake", "SCRAM-SHA-512", ""}, {"SASLAuthenticate", "SCRAM-SHA-512", "al,ice"},
			{"SASLAuthenticate", "SCRAM-SHA-512", "al,ice"}, {"Produce", "", "al,ice"}}, 0},
		{"PLAIN failed, then re-authenticated (KIP-368)", []exchange{
			{requestFrame(handshake("PLAIN"), 1, 1, "app"), responseFrame(kmsg.NewPtrSASLHandshakeResponse(), 1, 1)},
			{requestFrame(authenticate("\x00mallory\x00"+testPassword), 1, 2, "app"), responseFrame(authenticated("", 58), 1, 2)},
			produce(3),
			{requestFrame(handshake("PLAIN"), 1, 4, "app"), responseFrame(kmsg.NewPtrSASLHandshakeResponse(), 1, 4)},
			{requestFrame(authenticate("\x00bob\x00"+testPassword), 1, 5, "app"), responseFrame(authenticated("", 0), 1, 5)},
			produce(6),
		}, [][3]string{{"SASLHandshake", "PLAIN", ""}, {"SASLAuthenticate", "PLAIN", "mallory"}, {"Produce", "", ""},
			{"SASLHandshake", "PLAIN", ""}, {"SASLAuthenticate", "PLAIN", "bob"}, {"Produce", "", "bob"}}, 0},
		{"PLAIN with raw tokens (SaslHandshake v0)", []exchange{
			{requestFrame(handshake("PLAIN"), 0, 1, "app"), responseFrame(kmsg.NewPtrSASLHandshakeResponse(), 0, 1)},
			{raw("\x00carol\x00" + testPassword), raw("")},
			produce(2),
		}, [][3]string{{"SASLHandshake", "PLAIN", ""}, {"Produce", "", "carol"}}, 2},
		{"SCRAM with raw tokens (SaslHandshake v0)", []exchange{
			{requestFrame(handshake("SCRAM-SHA-256"), 0, 1, "app"), responseFrame(kmsg.NewPtrSASLHandshakeResponse(), 0, 1)},
			{raw(scramFirst), raw(serverFirst)},
			{raw(scramFinal), raw(serverFinal)},
			produce(2),
		}, [][3]string{{"SASLHandshake", "SCRAM-SHA-256", ""}, {"Produce", "", "al,ice"}}, 4},
		{"GSSAPI with raw tokens: until a request", []exchange{
			{requestFrame(handshake("GSSAPI"), 0, 1, "app"), responseFrame(kmsg.NewPtrSASLHandshakeResponse(), 0, 1)},
			{raw("\x60\x82\x02\x9e\x06\x09kerberos-ap-req"), raw("\x60\x81ap-rep")},
			{raw(""), raw("\x05\x04wrap")},
			produce(2),
		}, [][3]string{{"SASLHandshake", "GSSAPI", ""}, {"Produce", "", ""}}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, st := runExchanges(t, tt.xs)
			var have [][3]string
			for _, r := range got {
				have = append(have, [3]string{r.API, r.SASLMechanism, r.Principal})
				if !r.Answered {
					t.Errorf("%s %d unanswered", r.API, r.CorrelationID)
				}
			}
			if len(have) != len(tt.want) {
				t.Fatalf("got %v, want %v (stats %+v)", have, tt.want, st)
			}
			for i := range have {
				if have[i] != tt.want[i] {
					t.Errorf("event %d: %v, want %v", i, have[i], tt.want[i])
				}
			}
			if st.SASLTokens != tt.tokens || st.DecodeErrors != 0 || st.Resyncs != 0 || st.SkippedBytes != 0 || st.Unpaired != 0 || st.UnknownAPIs != 0 {
				t.Errorf("stats %+v, want %d raw tokens and nothing skipped", st, tt.tokens)
			}
		})
	}
}

// FuzzSASLToken: any token gives a short printable name or none, and
// never the bytes after PLAIN's second NUL (the password).
func FuzzSASLToken(f *testing.F) {
	f.Add("PLAIN", []byte("\x00user\x00pass"))
	f.Add("SCRAM-SHA-512", []byte("n,,n=us=3Der,r=abc"))
	f.Add("OAUTHBEARER", []byte("n,a=someone,\x01auth=Bearer x\x01\x01"))
	f.Fuzz(func(t *testing.T, mechanism string, token []byte) {
		name := tokenUser(mechanism, token)
		if len(name) > 4*maxPrincipal || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("name %q", name)
		}
		if mechanism == "PLAIN" {
			if parts := strings.SplitN(string(token), "\x00", 3); len(parts) == 3 && len(parts[2]) > 0 && name != "" &&
				strings.Contains(name, parts[2]) && !strings.Contains(parts[1], parts[2]) {
				t.Fatalf("password %q in name %q", parts[2], name)
			}
		}
	})
}

// FuzzSASLFrames: a SASL handshake v0 followed by fuzzer-chosen frames
// both ways: raw tokens and requests mixed must not panic or pair a
// response with the wrong request.
func FuzzSASLFrames(f *testing.F) {
	f.Add("PLAIN", []byte("\x00\x00\x00\x05\x00a\x00bc"), []byte("\x00\x00\x00\x00"), uint8(7))
	f.Add("SCRAM-SHA-512", raw("n,,n=u,r=1"), raw("r=12,s=x,i=1"), uint8(100))
	f.Add("GSSAPI", raw("token"), raw("reply"), uint8(3))
	f.Fuzz(func(t *testing.T, mechanism string, req, resp []byte, mss uint8) {
		seg := int(mss)%1400 + 1
		c := newConversation(40300)
		c.handshake()
		c.send(true, requestFrame(handshake(mechanism), 0, 1, "c"), seg, time.Millisecond)
		c.send(false, responseFrame(kmsg.NewPtrSASLHandshakeResponse(), 0, 1), seg, time.Millisecond)
		c.send(true, req, seg, time.Millisecond)
		c.send(false, resp, seg, time.Millisecond)
		c.send(true, requestFrame(produceRequest("t", 0, -1, "m"), 9, 2, "c"), seg, time.Millisecond)
		c.send(false, responseFrame(produceResponse("t", 0), 9, 2), seg, time.Millisecond)
		got, st := run(c.segs)
		for _, r := range got {
			if r.Answered && r.End.Before(r.Arrival) || len(r.Principal) > 4*maxPrincipal {
				t.Fatalf("event %+v", r)
			}
		}
		if st.Requests < st.Responses {
			t.Fatalf("more responses than requests: %+v", st)
		}
	})
}
