package clients

import (
	"sync"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// Live is the clients view of a live stream (the agent's): requests are
// counted into the current window; Report is the view of the last whole
// window (of the current one before the first ends), so that rates and
// findings speak of the recent past and memory stays bounded.
type Live struct {
	mu     sync.Mutex
	o      Options
	window time.Duration
	cur    *Aggregator
	start  time.Time
	last   *Report
}

// DefaultWindow is Live's window: long enough for rates (a client that
// refreshes metadata every 5 minutes by default is seen), short enough to
// say what the clients do now.
const DefaultWindow = 5 * time.Minute

// NewLive returns an empty Live view over windows of the given length
// (0: DefaultWindow).
func NewLive(o Options, window time.Duration) *Live {
	if window <= 0 {
		window = DefaultWindow
	}
	return &Live{o: o, window: window, cur: New(o)}
}

// Add counts one request.
func (l *Live) Add(r *event.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rotate(r.Arrival)
	l.cur.Add(r)
}

// rotate starts a new window when now is past the current one.
func (l *Live) rotate(now time.Time) {
	if l.start.IsZero() {
		l.start = now
		return
	}
	if now.Sub(l.start) < l.window {
		return
	}
	l.last = l.cur.Report()
	l.cur = New(l.o)
	l.start = now
}

// Report returns the last whole window's view as of now; before one
// ended, the current window's so far.
func (l *Live) Report(now time.Time) *Report {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.start.IsZero() {
		l.rotate(now)
	}
	if l.last != nil {
		return l.last
	}
	return l.cur.Report()
}
