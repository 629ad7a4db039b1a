package latency

import (
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

func TestSummary(t *testing.T) {
	s := NewSummary(3)
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for i := 1; i <= 1000; i++ {
		lat := time.Duration(i) * time.Millisecond
		s.Add(&event.Request{API: "Produce", Arrival: at, End: at.Add(lat), Answered: true,
			Partitions: []event.Partition{{Topic: "a"}, {Topic: "b"}, {Topic: "a", Partition: 1}}})
	}
	s.Add(&event.Request{API: "Produce", Arrival: at, Partitions: []event.Partition{{Topic: "a"}}}) // acks=0
	apis := s.APIs()
	if len(apis) != 1 || apis[0].Count != 1000 || apis[0].Unanswered != 1 {
		t.Fatalf("apis: %+v", apis)
	}
	for q, want := range map[float64]time.Duration{50: 500 * time.Millisecond, 99: 990 * time.Millisecond, 100: time.Second} {
		got := apis[0].Quantile(q)
		if d := got - want; d < -want/500 || d > want/500 {
			t.Errorf("p%v = %v, want %v", q, got, want)
		}
	}
	topics := s.Topics()
	if len(topics) != 2 || topics[0].Name != "a" || topics[0].Count != 1000 {
		t.Errorf("topics counted once per request: %+v %+v", topics[0], topics[1])
	}
	slow := s.Slowest()
	if len(slow) != 3 || slow[0].Latency() != time.Second || slow[2].Latency() != 998*time.Millisecond {
		t.Errorf("slowest: %v %v %v", slow[0].Latency(), slow[1].Latency(), slow[2].Latency())
	}
}

// TestSummaryLeavesOutClockSteps: a request whose response is timestamped
// before it (a clock step) is counted apart, in no latency statistic.
func TestSummaryLeavesOutClockSteps(t *testing.T) {
	s := NewSummary(3)
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for i := range 10 {
		s.Add(&event.Request{API: "Produce", Arrival: at, End: at.Add(time.Duration(10+i) * time.Millisecond), Answered: true})
	}
	s.Add(&event.Request{API: "Produce", Arrival: at, End: at.Add(-10 * time.Second), Answered: true, ClockStep: true})
	apis := s.APIs()
	if len(apis) != 1 || apis[0].Count != 10 || apis[0].Quantile(0) < 10*time.Millisecond || s.ClockSteps != 1 {
		t.Errorf("count %d, fastest %v, clock steps %d; want 10, 10ms, 1", apis[0].Count, apis[0].Quantile(0), s.ClockSteps)
	}
	for _, r := range s.Slowest() {
		if r.ClockStep {
			t.Errorf("a clock-stepped request among the slowest")
		}
	}
}
