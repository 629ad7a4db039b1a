package recorder

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/recording"
)

// attachInfo is what one attach of the tracer to a broker said.
type attachInfo struct {
	pid               int
	offset, uncertain time.Duration
	attached, skipped []string
	mode              string
}

// traceRun is the tracer following the broker into rec.
type traceRun struct {
	mu       sync.Mutex
	attaches []attachInfo
	done     chan struct{}
	sessions []iotrace.Session
	err      error
}

// startTrace starts following the broker with fc, its events into rec,
// and returns once the tracer has attached the first time, or its error
// when it ended before that.
func startTrace(ctx context.Context, o *Options, fc iotrace.FollowConfig, rec *recording.Writer) (*traceRun, error) {
	t := &traceRun{done: make(chan struct{})}
	firstAttach := make(chan struct{})
	fc.OnAttach = func(tr *iotrace.Tracer) {
		a, s := tr.JournalGroups()
		t.mu.Lock()
		t.attaches = append(t.attaches, attachInfo{tr.PID(), tr.ClockOffset(), tr.ClockUncertainty(), a, s, tr.Mode().String()})
		n := len(t.attaches)
		t.mu.Unlock()
		if n == 1 {
			close(firstAttach)
		} else {
			o.notef("tracing the new broker, pid %d", tr.PID())
		}
	}
	fc.OnExit = func(pid int) {
		o.notef("broker pid %d exited", pid)
	}
	go func() {
		defer close(t.done)
		t.sessions, t.err = iotrace.Follow(ctx, fc, rec.Handlers())
	}()
	select {
	case <-firstAttach:
		return t, nil
	case <-t.done:
		if t.err == nil {
			t.err = fmt.Errorf("%s: ended before the tracer attached", o.Name)
		}
		return nil, t.err
	}
}

// wait waits for the tracer to end (its context done) and returns its
// sessions, one per broker process it followed.
func (t *traceRun) wait() ([]iotrace.Session, error) {
	<-t.done
	return t.sessions, t.err
}

// first is the first attach's report.
func (t *traceRun) first() attachInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.attaches[0]
}
