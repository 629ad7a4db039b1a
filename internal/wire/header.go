package wire

import (
	"encoding/binary"
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestHeader is the part of a request frame before its body.
type requestHeader struct {
	key, version  int16
	correlationID int32
	clientID      []byte // points into the frame
	known         bool   // kmsg knows this key and version
	flexible      bool   // request header v2 (tagged fields)
}

var errShortHeader = errors.New("request header is cut short")

// parseRequestHeader reads the request header of a frame body (after the
// 4-byte size) and returns the header and the request body.
func parseRequestHeader(b []byte) (requestHeader, []byte, error) {
	var h requestHeader
	if len(b) < 10 {
		return h, nil, errShortHeader
	}
	h.key = int16(binary.BigEndian.Uint16(b[0:2]))
	h.version = int16(binary.BigEndian.Uint16(b[2:4]))
	h.correlationID = int32(binary.BigEndian.Uint32(b[4:8]))
	idLen := int(int16(binary.BigEndian.Uint16(b[8:10])))
	rest := b[10:]
	if idLen > 0 {
		if idLen > len(rest) {
			return h, nil, errShortHeader
		}
		h.clientID, rest = rest[:idLen], rest[idLen:]
	}
	if kv := versionsOf(h.key); kv.known && h.version >= 0 && h.version <= kv.max {
		h.known, h.flexible = true, kv.flexibleFrom >= 0 && h.version >= kv.flexibleFrom
	}
	if h.flexible {
		var ok bool
		if rest, ok = skipTags(rest); !ok {
			return h, nil, errShortHeader
		}
	}
	return h, rest, nil
}

// responseIsFlexible reports whether a response to this request uses
// response header v1 (tagged fields). ApiVersions responses always use
// header v0, so that clients can read them before knowing versions.
func responseIsFlexible(h *requestHeader) bool {
	return h.flexible && h.key != 18
}

// apiName returns kmsg's name of an API key, or "unknown(N)".
func apiName(key int16) string {
	if name := kmsg.NameForKey(key); name != "" {
		return name
	}
	return unknownAPI(key)
}

// unknownAPI names an API key kmsg does not know (or a version of one it
// does not know).
func unknownAPI(key int16) string { return "unknown(" + strconv.Itoa(int(key)) + ")" }

// plausibleRequest reports whether b (starting at a 4-byte size) looks like
// the start of a request frame whose API key and version kmsg knows. It is
// used to resynchronise after a gap, so it is strict: a known key and
// version, a non-negative correlation id, and a non-empty printable client
// id (every mainstream client sends one; runs of zero bytes in record data
// would otherwise pass as key 0, version 0, correlation id 0). A frame that
// passes is still tentative until its body decodes.
func plausibleRequest(b []byte, maxFrame int) (ok bool, need int) {
	const fixed = 4 + 10
	if len(b) < fixed {
		return false, fixed
	}
	size := int(int32(binary.BigEndian.Uint32(b[0:4])))
	if size < 10 || size > maxFrame {
		return false, 0
	}
	key := int16(binary.BigEndian.Uint16(b[4:6]))
	version := int16(binary.BigEndian.Uint16(b[6:8]))
	if kv := versionsOf(key); !kv.known || version < 0 || version > kv.max {
		return false, 0
	}
	if int32(binary.BigEndian.Uint32(b[8:12])) < 0 {
		return false, 0
	}
	idLen := int(int16(binary.BigEndian.Uint16(b[12:14])))
	if idLen < 1 || idLen > 256 || idLen > size-10 {
		return false, 0
	}
	if len(b) < fixed+idLen {
		return false, fixed + idLen
	}
	for _, c := range b[fixed : fixed+idLen] {
		if c < 0x20 || c > 0x7e {
			return false, 0
		}
	}
	return true, 0
}

// skipTags skips a tagged-field section. kmsg.SkipTags loops for as many
// tags as the count claims even after the input is exhausted (a count of
// 2^32-1 costs seconds); this version stops at the first short read.
func skipTags(b []byte) ([]byte, bool) {
	r := kbin.Reader{Src: b}
	for num := r.Uvarint(); num > 0 && r.Ok(); num-- {
		r.Uvarint()
		size := r.Uvarint()
		r.Span(int(size))
	}
	return r.Src, r.Ok()
}

// keyVersions is what parsing a request header needs to know of its API
// key: whether kmsg knows it, its highest version, and its first flexible
// version (-1: none; Kafka's flexible versions are always "N+").
type keyVersions struct {
	known        bool
	max          int16
	flexibleFrom int16
}

// requestVersions is keyVersions by API key, asked of kmsg once: a request
// struct built per request only to ask was an allocation per request.
var requestVersions = func() (t [kmsg.MaxKey + 1]keyVersions) {
	for key := range t {
		req := kmsg.RequestForKey(int16(key))
		if req == nil {
			continue
		}
		kv := keyVersions{known: true, max: req.MaxVersion(), flexibleFrom: -1}
		for v := int16(0); v <= kv.max; v++ {
			req.SetVersion(v)
			if req.IsFlexible() {
				kv.flexibleFrom = v
				break
			}
		}
		t[key] = kv
	}
	return t
}()

func versionsOf(key int16) keyVersions {
	if key < 0 || int(key) >= len(requestVersions) {
		return keyVersions{}
	}
	return requestVersions[key]
}
