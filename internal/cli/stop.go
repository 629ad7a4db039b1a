package cli

import (
	"context"
	"fmt"
	"io"
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

// stopOnSignal returns a context cancelled at Ctrl-C or SIGTERM, saying
// so on stderr as command, and the function that stops catching them.
// Unlike untilStopped's, signals keep being caught until then, while the
// run cleans up: a second Ctrl-C must not kill it halfway (lab fs would
// leave mounts behind; after SIGKILL the next run or --cleanup removes
// them).
func stopOnSignal(ctx context.Context, stderr io.Writer, command string) (context.Context, func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "%s: %v: stopping, and removing what the run made\n", command, sig)
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel()
		signal.Stop(sigs)
	}
}
