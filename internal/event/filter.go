package event

import (
	"net"
	"strconv"
	"strings"
	"time"
)

// RequestFilter selects requests. The zero value selects every request.
type RequestFilter struct {
	APIs    []string      // API names (case-insensitive) or numeric keys
	Topics  []string      // requests naming any of these topics (or topic ids)
	Slow    time.Duration // answered requests at or above this latency
	Clients []string      // client "ip:port", client ip, or client id
}

// Match reports whether r passes every set condition.
func (f *RequestFilter) Match(r *Request) bool {
	if len(f.APIs) > 0 && !f.matchAPI(r) {
		return false
	}
	if f.Slow > 0 && (!r.Answered || r.Latency() < f.Slow) {
		return false
	}
	if len(f.Clients) > 0 && !f.matchClient(r) {
		return false
	}
	if len(f.Topics) > 0 && !f.matchTopic(r) {
		return false
	}
	return true
}

func (f *RequestFilter) matchAPI(r *Request) bool {
	for _, a := range f.APIs {
		if strings.EqualFold(a, r.API) {
			return true
		}
		if k, err := strconv.Atoi(a); err == nil && int16(k) == r.APIKey {
			return true
		}
	}
	return false
}

func (f *RequestFilter) matchClient(r *Request) bool {
	host, _, _ := net.SplitHostPort(r.Client)
	for _, c := range f.Clients {
		if c == r.Client || c == host || c == r.ClientID {
			return true
		}
	}
	return false
}

func (f *RequestFilter) matchTopic(r *Request) bool {
	for i := range r.Partitions {
		p := &r.Partitions[i]
		for _, t := range f.Topics {
			if t == p.Topic || t == p.TopicID {
				return true
			}
		}
	}
	return false
}

// KeepTopics drops from r the partitions of topics the filter does not
// name, so that a topic filter narrows the rows printed too.
func (f *RequestFilter) KeepTopics(r *Request) {
	if len(f.Topics) == 0 {
		return
	}
	kept := r.Partitions[:0]
	for _, p := range r.Partitions {
		for _, t := range f.Topics {
			if t == p.Topic || t == p.TopicID {
				kept = append(kept, p)
				break
			}
		}
	}
	r.Partitions = kept
}
