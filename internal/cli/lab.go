package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/lab"
)

func newLabCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Run real Kafka brokers on this machine for experiments and tests",
	}
	cmd.AddCommand(newLabBrokerCmd())
	return cmd
}

func defaultLabDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "kscope", "lab", "broker")
	}
	return "kscope-lab-broker"
}

func newLabBrokerCmd() *cobra.Command {
	var (
		dir        string
		port       int
		requestLog bool
		heapMB     int
	)
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Start, stop or show a single-node KRaft broker (Apache Kafka " + lab.KafkaVersion + " from Maven Central) on 127.0.0.1",
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", defaultLabDir(), "directory holding the broker's config, data and logs")
	start := &cobra.Command{
		Use:   "start",
		Short: "Start a broker that keeps running after this command exits",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if b, err := lab.Attach(dir); err == nil {
				return fmt.Errorf("a broker already runs for %s: %s (pid %d)", dir, b.Addr(), b.PID())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			b, err := lab.StartBroker(ctx, lab.BrokerConfig{Dir: dir, Port: port, RequestLog: requestLog, HeapMB: heapMB, Detach: true})
			if err != nil {
				return err
			}
			printBroker(cmd, b)
			return nil
		},
	}
	start.Flags().IntVar(&port, "port", 9092, "PLAINTEXT port on 127.0.0.1 (0: any free port)")
	start.Flags().BoolVar(&requestLog, "request-log", false, "log every completed request as JSON to DIR/kafka-request.log (kafka.request.logger at DEBUG)")
	start.Flags().IntVar(&heapMB, "heap-mb", 512, "broker JVM heap in MiB")
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop the broker of --dir",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := lab.Attach(dir)
			if errors.Is(err, lab.ErrNotRunning) {
				fmt.Fprintf(cmd.OutOrStdout(), "no broker running for %s\n", dir)
				return nil
			}
			if err != nil {
				return err
			}
			return b.Stop()
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the broker of --dir; exit code 1 when none runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := lab.Attach(dir)
			if err != nil {
				return err
			}
			printBroker(cmd, b)
			return nil
		},
	}
	cmd.AddCommand(start, stop, status)
	return cmd
}

func printBroker(cmd *cobra.Command, b *lab.Broker) {
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "broker    %s\npid       %d\ndir       %s\nlog dirs  %v\njars      %s\n", b.Addr(), b.PID(), b.Dir(), b.LogDirs(), b.LibsDir())
	if p := b.RequestLogPath(); p != "" {
		fmt.Fprintf(w, "requests  %s\n", p)
	}
}
