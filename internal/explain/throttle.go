package explain

import (
	"fmt"
	"time"
)

// CauseThrottle: the response's throttle time (the broker's quota on the
// client) accounts for the request's latency.
const CauseThrottle = "throttle"

func init() {
	register(cause{
		name:  CauseThrottle,
		order: 40,
		short: "throttle",
		help:  "the response's throttle time accounts for it",
		// Known only as a sum: when in the request the broker held it is
		// not on the wire.
		measure: func(m *measuring) measured {
			return measured{ns: min(int64(m.r.ThrottleMs)*int64(time.Millisecond), m.L)}
		},
		detail: func(f *Finding) string { return fmt.Sprintf("throttled %d ms by quota", f.ThrottleMs) },
	})
}
