package wire

import (
	"bytes"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/event"
)

// A connection to a SASL listener authenticates before its first other
// request: SaslHandshake names the mechanism, then the mechanism's tokens
// are exchanged, in SaslAuthenticate requests (SaslHandshake v1) or, after
// a SaslHandshake v0, as raw tokens with only a 4-byte size and no Kafka
// header. A client re-authenticates mid-connection the same way
// (KIP-368, v1 only).
//
// kscope reports the mechanism and the name the client authenticates as,
// never a password or a proof: the tokens are read here and nothing of
// them but the name is kept.

// API keys of the SASL exchange.
const (
	apiSaslHandshake    = 17
	apiSaslAuthenticate = 36
)

// saslState is one connection's authentication as the capture saw it.
type saslState struct {
	mechanism string
	// attempt is the name of the authentication under way; principal
	// the one that succeeded last.
	attempt, principal string
	// After a SaslHandshake v0: raw tokens still expected from the client
	// and the broker (one broker token answers each client token), or,
	// for a mechanism whose token count is not known, raw client tokens
	// until one is a request.
	rawClient, rawServer int
	rawUntilRequest      bool
}

// rawTokens is how many tokens a client sends in a mechanism's exchange.
func rawTokens(mechanism string) int {
	switch {
	case mechanism == "PLAIN", mechanism == "OAUTHBEARER":
		return 1
	case strings.HasPrefix(mechanism, "SCRAM-"):
		return 2
	}
	return 0 // not known (GSSAPI): until a frame is a request
}

// expectingRawClient reports whether the next client frame is a raw token.
func (s *saslState) expectingRawClient() bool { return s.rawClient > 0 || s.rawUntilRequest }

// request reads a SaslHandshake or SaslAuthenticate request into ev.
func (s *saslState) request(ev *event.Request, h requestHeader, body []byte) {
	switch h.key {
	case apiSaslHandshake:
		var req kmsg.SASLHandshakeRequest
		req.SetVersion(h.version)
		if req.ReadFrom(body) != nil {
			return
		}
		s.mechanism = printableName(req.Mechanism)
		ev.SASLMechanism = s.mechanism
	case apiSaslAuthenticate:
		var req kmsg.SASLAuthenticateRequest
		req.SetVersion(h.version)
		if req.ReadFrom(body) != nil {
			return
		}
		if name := tokenUser(s.mechanism, req.SASLAuthBytes); name != "" {
			s.attempt = name
		}
		ev.SASLMechanism, ev.Principal = s.mechanism, s.attempt
	}
}

// response reads a SaslHandshake or SaslAuthenticate response: its error
// code, and whether raw tokens follow or the client is now authenticated.
func (s *saslState) response(ev *event.Request, h requestHeader, body []byte) {
	switch h.key {
	case apiSaslHandshake:
		var resp kmsg.SASLHandshakeResponse
		resp.SetVersion(h.version)
		if resp.ReadFrom(body) != nil {
			return
		}
		code := resp.ErrorCode
		ev.ErrorCode = &code
		if code == 0 && h.version == 0 {
			s.rawClient = rawTokens(s.mechanism)
			s.rawUntilRequest = s.rawClient == 0
		}
	case apiSaslAuthenticate:
		var resp kmsg.SASLAuthenticateResponse
		resp.SetVersion(h.version)
		if resp.ReadFrom(body) != nil {
			return
		}
		code := resp.ErrorCode
		ev.ErrorCode = &code
		if code == 0 && s.attempt != "" && (!strings.HasPrefix(s.mechanism, "SCRAM-") || len(resp.SASLAuthBytes) > 0 && bytes.HasPrefix(resp.SASLAuthBytes, []byte("v="))) {
			s.principal = s.attempt
		}
	}
}

// clientToken takes a raw client token (after a SaslHandshake v0).
func (s *saslState) clientToken(token []byte) {
	if name := tokenUser(s.mechanism, token); name != "" {
		s.attempt = name
	}
	if s.rawClient > 0 {
		s.rawClient--
	}
	s.rawServer++
}

// serverToken takes a raw broker token; after the last one the client is
// authenticated (a failure closes the connection).
func (s *saslState) serverToken() {
	s.rawServer--
	if s.rawServer == 0 && s.rawClient == 0 && !s.rawUntilRequest && s.attempt != "" {
		s.principal = s.attempt
	}
}

// maxPrincipal bounds the principal names kept.
const maxPrincipal = 256

// tokenUser returns the user name a client's SASL token carries, and
// nothing else of it: PLAIN's authentication id ("authzid\0authcid\0
// password"), a SCRAM client-first message's n= attribute ("n,,n=user,
// r=nonce"), or OAUTHBEARER's authzid (a=). Other tokens give "".
func tokenUser(mechanism string, token []byte) string {
	switch {
	case mechanism == "PLAIN":
		parts := bytes.SplitN(token, []byte{0}, 3)
		if len(parts) != 3 {
			return ""
		}
		return printableName(string(parts[1]))
	case strings.HasPrefix(mechanism, "SCRAM-"):
		// Only a client-first message: a GS2 header then n=.
		if !bytes.HasPrefix(token, []byte("n,")) && !bytes.HasPrefix(token, []byte("y,")) {
			return ""
		}
		return gs2Attribute(token, "n=")
	case mechanism == "OAUTHBEARER":
		return gs2Attribute(bytes.TrimPrefix(token, []byte("n,")), "a=")
	}
	return ""
}

// gs2Attribute finds attr (e.g. "n=") among a SCRAM or GS2 message's
// comma-separated attributes and decodes its saslname (=2C is ",", =3D
// is "=").
func gs2Attribute(msg []byte, attr string) string {
	for _, f := range bytes.Split(msg, []byte(",")) {
		if v, ok := bytes.CutPrefix(f, []byte(attr)); ok {
			name := strings.NewReplacer("=2C", ",", "=3D", "=").Replace(string(v))
			return printableName(name)
		}
	}
	return ""
}

// printableName keeps a name from the wire printable and short: control
// characters become "?".
func printableName(s string) string {
	if len(s) > maxPrincipal {
		s = s[:maxPrincipal]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return '?'
		}
		return r
	}, s)
}
