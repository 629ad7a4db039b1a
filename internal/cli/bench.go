package cli

import "github.com/spf13/cobra"

// newBenchCmd groups the load generator's commands: run, compare, report.
func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Open-loop Kafka load with honest latency, and a verdict when two runs differ",
		Long: `kscope bench run drives produce (and consume) load against a real cluster
with franz-go, on an open-loop schedule: every message has an intended
send time, and lateness shows up as response time instead of being hidden.
Latencies go into HdrHistograms; every acknowledged message is accounted
for; RESULT.json keeps the raw histograms and a per-second series.

kscope bench compare A.json B.json gives a verdict per metric, backed by a
Mann–Whitney test over the per-second samples (exit 1 on a regression);
kscope bench report tables one or more runs.`,
	}
	cmd.AddCommand(newBenchRunCmd(), newBenchCompareCmd(), newBenchReportCmd())
	return cmd
}
