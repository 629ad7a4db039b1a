package explain

import "fmt"

// CauseResponseSend: the response's bytes took most of the request's time
// to leave (the client, or the network, slow to take them).
const CauseResponseSend = "response-send"

func init() {
	register(cause{
		name:  CauseResponseSend,
		order: 50,
		short: "response",
		help:  "the response took most of the time to leave",
		measure: func(m *measuring) measured {
			// Its last part: from the response's first byte to its last.
			response := min(int64(m.r.ResponseMs*1e6), m.L)
			if response <= 0 {
				return measured{ns: response}
			}
			return measured{ns: response, ivs: []interval{{m.E - response, m.E}}}
		},
		detail: func(f *Finding) string {
			return fmt.Sprintf("the %.1f ms response took %.1f ms to leave", f.LatencyMs, f.ResponseMs)
		},
	})
}
