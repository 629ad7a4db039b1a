package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// untilStopped returns ctx ended by SIGINT or SIGTERM and, when d > 0,
// once d has passed: the commands that run until stopped or for
// --duration. release undoes both.
func untilStopped(ctx context.Context, d time.Duration) (_ context.Context, release func()) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	if d <= 0 {
		return ctx, stop
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, func() { cancel(); stop() }
}
