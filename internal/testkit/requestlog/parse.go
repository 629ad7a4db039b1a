package requestlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"
)

const marker = "Completed request:"

// zeroTopicID is Kafka's Uuid.ZERO_UUID, sent where a topic has no id.
const zeroTopicID = "AAAAAAAAAAAAAAAAAAAAAA"

// line mirrors the JSON of one entry. Unknown fields are ignored; missing
// ones stay zero.
type line struct {
	IsForwarded   bool `json:"isForwarded"`
	RequestHeader struct {
		RequestAPIKey     int16   `json:"requestApiKey"`
		RequestAPIVersion int16   `json:"requestApiVersion"`
		CorrelationID     int32   `json:"correlationId"`
		ClientID          *string `json:"clientId"`
		RequestAPIKeyName string  `json:"requestApiKeyName"`
		Deprecated        bool    `json:"requestApiVersionDeprecated"`
	} `json:"requestHeader"`
	Request             json.RawMessage `json:"request"`
	Response            json.RawMessage `json:"response"`
	Connection          string          `json:"connection"`
	TotalTimeMs         float64         `json:"totalTimeMs"`
	RequestQueueTimeMs  float64         `json:"requestQueueTimeMs"`
	LocalTimeMs         float64         `json:"localTimeMs"`
	RemoteTimeMs        float64         `json:"remoteTimeMs"`
	ThrottleTimeMs      float64         `json:"throttleTimeMs"`
	ResponseQueueTimeMs float64         `json:"responseQueueTimeMs"`
	SendTimeMs          float64         `json:"sendTimeMs"`
	SecurityProtocol    string          `json:"securityProtocol"`
	Principal           string          `json:"principal"`
	Listener            string          `json:"listener"`
	ClientInformation   struct {
		SoftwareName    string `json:"softwareName"`
		SoftwareVersion string `json:"softwareVersion"`
	} `json:"clientInformation"`
}

// Parse reads a request log. Lines without "Completed request:" are
// skipped. A line whose JSON does not parse is an error, except a last
// line without a newline, which is a write still in progress and ignored.
func Parse(r io.Reader) ([]Entry, error) {
	br := bufio.NewReader(r)
	var entries []Entry
	ids := map[string]string{} // topic id -> name
	for n := 1; ; n++ {
		// ReadBytes, not a Scanner: lines (e.g. big Metadata responses)
		// have no useful upper bound.
		raw, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return entries, fmt.Errorf("requestlog: read line %d: %w", n, err)
		}
		partial := errors.Is(err, io.EOF) && len(raw) > 0
		if len(raw) > 0 {
			e, ok, perr := parseLine(raw, ids)
			switch {
			case perr != nil && partial:
				// Torn last line.
			case perr != nil:
				return entries, fmt.Errorf("requestlog: line %d: %w", n, perr)
			case ok:
				entries = append(entries, e)
			}
		}
		if err != nil {
			break
		}
	}
	resolveTopics(entries, ids)
	return entries, nil
}

// ParseLine parses a single log line. ok is false for a line that is not a
// completed-request entry. Topic ids are not resolved.
func ParseLine(s string) (e Entry, ok bool, err error) {
	return parseLine([]byte(s), nil)
}

func parseLine(raw []byte, ids map[string]string) (Entry, bool, error) {
	i := bytes.Index(raw, []byte(marker))
	if i < 0 {
		return Entry{}, false, nil
	}
	var l line
	// A Decoder stops after the object, so a trailing " (logger)" from
	// Kafka's default pattern is fine.
	dec := json.NewDecoder(bytes.NewReader(raw[i+len(marker):]))
	if err := dec.Decode(&l); err != nil {
		return Entry{}, false, fmt.Errorf("decode: %w", err)
	}
	e := Entry{
		Time:                parseTime(string(raw[:i])),
		APIKey:              l.RequestHeader.RequestAPIKey,
		APIName:             l.RequestHeader.RequestAPIKeyName,
		APIVersion:          l.RequestHeader.RequestAPIVersion,
		Deprecated:          l.RequestHeader.Deprecated,
		CorrelationID:       l.RequestHeader.CorrelationID,
		Connection:          l.Connection,
		TotalTimeMs:         l.TotalTimeMs,
		RequestQueueTimeMs:  l.RequestQueueTimeMs,
		LocalTimeMs:         l.LocalTimeMs,
		RemoteTimeMs:        l.RemoteTimeMs,
		ThrottleTimeMs:      l.ThrottleTimeMs,
		ResponseQueueTimeMs: l.ResponseQueueTimeMs,
		SendTimeMs:          l.SendTimeMs,
		IsForwarded:         l.IsForwarded,
		Listener:            l.Listener,
		SecurityProtocol:    l.SecurityProtocol,
		Principal:           l.Principal,
		SoftwareName:        l.ClientInformation.SoftwareName,
		SoftwareVersion:     l.ClientInformation.SoftwareVersion,
		Request:             l.Request,
		Response:            l.Response,
	}
	if l.RequestHeader.ClientID != nil {
		e.ClientID = *l.RequestHeader.ClientID
	}
	e.BrokerAddr, e.ClientAddr = splitConnection(l.Connection)
	switch e.APIKey {
	case KeyProduce:
		e.TopicPartitions = produceTopics(l.Request)
	case KeyFetch:
		e.TopicPartitions = fetchTopics(l.Request)
	case KeyOffsetCommit:
		e.TopicPartitions = offsetCommitTopics(l.Request)
	case KeyMetadata, KeyCreateTopics:
		if ids != nil {
			learnTopicIDs(l.Response, ids)
		}
	}
	return e, true, nil
}

// parseTime accepts internal/lab's RFC 3339 prefix and Kafka's default
// "[2006-01-02 15:04:05,000]" (local time).
func parseTime(prefix string) time.Time {
	s := strings.TrimSpace(prefix)
	if t, err := time.Parse(time.RFC3339Nano, firstField(s)); err == nil {
		return t
	}
	if strings.HasPrefix(s, "[") {
		if j := strings.IndexByte(s, ']'); j > 0 {
			if t, err := time.ParseInLocation("2006-01-02 15:04:05,000", s[1:j], time.Local); err == nil {
				return t
			}
		}
	}
	return time.Time{}
}

func firstField(s string) string {
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[:i]
	}
	return s
}

// splitConnection splits Kafka's connection id
// "localHost:localPort-remoteHost:remotePort-processor-index" (older
// brokers: without "-processor"). Hosts are IP literals, which contain no
// '-', so splitting on '-' is safe even for IPv6.
func splitConnection(conn string) (broker, client string) {
	parts := strings.Split(conn, "-")
	if len(parts) < 2 {
		return "", ""
	}
	return hostPort(parts[0]), hostPort(parts[1])
}

// hostPort turns "h:p" (h possibly a Java-style IPv6 literal such as
// 0:0:0:0:0:0:0:1) into the net.JoinHostPort form with a canonical IP,
// e.g. "[::1]:p", so it compares equal to Go's and pcap addresses.
func hostPort(s string) string {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s
	}
	host := strings.Trim(s[:i], "[]")
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.Unmap().String()
	}
	return net.JoinHostPort(host, s[i+1:])
}
