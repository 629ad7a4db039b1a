package recorder

import (
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/source"
)

// captureCounters is meta.json's account of the capture, losses included.
func captureCounters(res source.Result, pcapPackets int64) recording.CaptureCounters {
	w := res.Wire
	return recording.CaptureCounters{Packets: res.Capture.Packets, KernelDrops: res.Capture.KernelDrops,
		Requests: w.Requests, Answered: w.Responses, Unanswered: w.Unanswered, SkippedBytes: w.SkippedBytes, Gaps: w.Gaps,
		DecodeErrors: w.DecodeErrors, PcapPackets: pcapPackets, FooterSummary: res.FormatFooter()}
}

// sessionStats sums the tracer's sessions' counters and lists their
// brokers' pids.
func sessionStats(sessions []iotrace.Session) (iotrace.Stats, []int) {
	var st iotrace.Stats
	var pids []int
	for _, se := range sessions {
		iotrace.AddStats(&st, se.Stats)
		pids = append(pids, se.PID)
	}
	return st, pids
}

// traceCounters is meta.json's account of the tracer, losses included,
// and of the clocks its events were put on (first: its first attach).
func traceCounters(st iotrace.Stats, first attachInfo, o *Options) (recording.TraceCounters, recording.Clock) {
	return recording.TraceCounters{Writes: int64(st.Reported), JournalEvents: int64(st.JournalEvents),
			KernelWaits: int64(st.WaitEvents), WaitRingbufDrops: int64(st.WaitRingbufDrops),
			StealIntervals: int64(st.StealEvents), StealRingbufDrops: int64(st.StealRingbufDrops), MinStealNs: int64(o.StealMin),
			OtherFiles: int64(st.OtherFiles), Unnamed: int64(st.Unnamed), RingbufDrops: int64(st.RingbufDrops),
			JournalRingbufDrops: int64(st.JournalRingbufDrops), HistFull: int64(st.HistFull), StartFull: int64(st.StartFull),
			MinLatencyNs: int64(o.MinLatency), JournalAttached: first.attached, JournalSkipped: first.skipped,
			Mode: first.mode},
		recording.Clock{CaptureClock: "CLOCK_REALTIME (kernel packet timestamps)",
			TraceClock:         "CLOCK_MONOTONIC, converted to CLOCK_REALTIME",
			TraceClockOffsetNs: int64(first.offset), TraceClockUncertaintyNs: int64(first.uncertain)}
}
