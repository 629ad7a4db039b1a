package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/output"
)

func newLabCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Run real Kafka brokers on this machine for experiments and tests",
	}
	cmd.AddCommand(newLabBrokerCmd(), newLabFSCmd(), newLabVersionsCmd())
	return cmd
}

func defaultLabDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "kscope", "lab", "broker")
	}
	return "kscope-lab-broker"
}

func newLabBrokerCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Start, stop or show a KRaft broker or cluster (Apache Kafka from Maven Central, default " + lab.KafkaVersion + ") on 127.0.0.1",
		Long: `Start, stop or show real Apache Kafka on 127.0.0.1: one KRaft node
(broker and controller in one JVM) or a cluster of --brokers such nodes,
each with its own port, controller port and dir (DIR/node-<id>). The jars of
--version are resolved from Maven Central by scripts/kafka-jars.sh into
~/.cache/kscope/kafka-<version>/libs.

With --netns (root) every node runs in a network namespace of its own,
joined by a veth pair to a bridge in the root namespace, at 10.X.Y.(10+id)
on ports 9092 and 9093: the host end of a node's veth carries all its
traffic. With --fs ext4|xfs (root) every node's log dir is a file system of
its own on a loop device. stop removes all of it again.

With --tls every node also has an SSL and a SASL_SSL listener (PLAIN and
SCRAM-SHA-512), with certificates from a CA of the lab's own (DIR/tls/ca.pem)
and client properties for Kafka's Java tools in DIR/tls; the passwords are
only in DIR/tls and never printed. See docs/lab.md.`,
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", defaultLabDir(), "directory holding the brokers' config, data and logs")
	check(cmd.PersistentFlags(), "dir", &dir, notEmpty)
	start := newLabBrokerStartCmd(&dir)
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop the broker(s) of --dir",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := lab.AttachCluster(dir)
			if errors.Is(err, lab.ErrNotRunning) {
				fmt.Fprintf(cmd.OutOrStdout(), "no broker running for %s\n", output.Escape(dir))
				// Namespaces, mounts and loop devices a crashed start (or
				// stop) left; nothing when there are none.
				return lab.Cleanup(dir)
			}
			if err != nil {
				return err
			}
			return c.Stop()
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the broker(s) of --dir, one line per node; exit code 1 when none runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := lab.AttachCluster(dir)
			if err != nil {
				return err
			}
			printCluster(cmd, c)
			return nil
		},
	}
	cmd.AddCommand(start, stop, status)
	return cmd
}

// labBrokerStartOptions are the flags of 'kscope lab broker start'.
type labBrokerStartOptions struct {
	port       int
	brokers    int
	version    string
	requestLog bool
	heapMB     int
	netns      bool
	fsType     string
	fsSizeMB   int
	tlsOn      bool
	sslPort    int
	saslPort   int
}

// newLabBrokerStartCmd is `kscope lab broker start`; dir is the parent's
// --dir.
func newLabBrokerStartCmd(dir *string) *cobra.Command {
	var o labBrokerStartOptions
	start := &cobra.Command{
		Use:   "start",
		Short: "Start a broker (or --brokers N of them) that keeps running after this command exits",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLabBrokerStart(cmd, *dir, &o)
		},
	}
	labBrokerStartFlags(&o, start.Flags())
	return start
}

// labBrokerStartFlags defines the flags of 'kscope lab broker start' on
// f, with their checks.
func labBrokerStartFlags(o *labBrokerStartOptions, f *pflag.FlagSet) {
	f.IntVar(&o.port, "port", 9092, "PLAINTEXT port on 127.0.0.1 of node 1; node i gets PORT+i-1 (0: any free ports); with --netns every node's port, at its own address")
	f.IntVar(&o.brokers, "brokers", 0, "number of nodes (default: as many as the cluster in --dir has, else 1)")
	f.StringVar(&o.version, "version", "", "Apache Kafka release, e.g. 3.9.1 or 4.1.1 (default: the one in --dir, else "+lab.KafkaVersion+")")
	f.BoolVar(&o.requestLog, "request-log", false, "log every completed request as JSON to NODEDIR/kafka-request.log (kafka.request.logger at DEBUG)")
	f.IntVar(&o.heapMB, "heap-mb", 0, "JVM heap per node in MiB (default 512 for one node, 256 each for more)")
	f.BoolVar(&o.netns, "netns", false, "run every node in a network namespace of its own behind a bridge, at 10.X.Y.(10+id):PORT (root; default: as the cluster in --dir was started)")
	f.StringVar(&o.fsType, "fs", "", "put every node's log dir on a file system of its own, ext4 or xfs, on a loop device (root; default: as the cluster in --dir was started)")
	f.IntVar(&o.fsSizeMB, "fs-size", lab.DefaultFSSizeMB, "size in MiB of each node's sparse image with --fs (when it is made)")
	f.BoolVar(&o.tlsOn, "tls", false, "also give every node an SSL and a SASL_SSL (PLAIN, SCRAM-SHA-512) listener, certificates and users in DIR/tls (Kafka 3.5 or later; default: as the cluster in --dir was started)")
	f.IntVar(&o.sslPort, "ssl-port", 0, "with --tls, SSL port of node 1; node i gets PORT+i-1 (0: free ports, kept across restarts; with --netns 9094)")
	f.IntVar(&o.saslPort, "sasl-ssl-port", 0, "with --tls, SASL_SSL port of node 1; node i gets PORT+i-1 (0: free ports, kept across restarts; with --netns 9095)")
	check(f, "port", &o.port, portOrAny)
	check(f, "brokers", &o.brokers, nonNegative) // 0: as many as the cluster in --dir has
	check(f, "version", &o.version, optional(lab.CheckVersion))
	check(f, "heap-mb", &o.heapMB, nonNegative)
	check(f, "fs", &o.fsType, optional(oneOf("ext4", "xfs")))
	check(f, "fs-size", &o.fsSizeMB, positive)
	check(f, "ssl-port", &o.sslPort, portOrAny)
	check(f, "sasl-ssl-port", &o.saslPort, portOrAny)
}

// runLabBrokerStart starts the cluster of dir, detached, unless one runs
// already, and prints it.
func runLabBrokerStart(cmd *cobra.Command, dir string, o *labBrokerStartOptions) error {
	if c, err := lab.AttachCluster(dir); err == nil {
		return fmt.Errorf("a cluster already runs for %s: %s", dir, c.Bootstrap())
	}
	changed := cmd.Flags().Changed
	// A restart keeps the namespaces and file systems the cluster was
	// started with unless told otherwise (which then fails).
	if rec, err := lab.RecordedClusterConfig(dir); err == nil {
		if !changed("netns") {
			o.netns = rec.Netns
		}
		if !changed("fs") {
			o.fsType = rec.FS
		}
		if !changed("tls") {
			o.tlsOn = rec.Security != nil
		}
	}
	var security *lab.SecurityConfig
	if o.tlsOn {
		security = &lab.SecurityConfig{SSLPort: o.sslPort, SASLSSLPort: o.saslPort}
	} else if changed("ssl-port") || changed("sasl-ssl-port") {
		return badInput(errors.New("--ssl-port and --sasl-ssl-port need --tls"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := lab.StartCluster(ctx, lab.ClusterConfig{
		Dir:        dir,
		Brokers:    o.brokers,
		Port:       o.port,
		Version:    o.version,
		RequestLog: o.requestLog,
		HeapMB:     o.heapMB,
		Detach:     true,
		Netns:      o.netns,
		FS:         o.fsType,
		FSSizeMB:   o.fsSizeMB,
		Security:   security,
	})
	if err != nil {
		return err
	}
	printCluster(cmd, c)
	return nil
}

// printCluster prints key/value lines about the cluster, then one line per
// node. With one node the old single-broker keys "broker" and "pid" come
// first, which scripts read (awk '$1 == "pid"').
func printCluster(cmd *cobra.Command, c *lab.Cluster) {
	w := cmd.OutOrStdout()
	nodes := c.Brokers()
	if len(nodes) == 1 {
		fmt.Fprintf(w, "broker     %s\npid        %s\n", nodes[0].Addr(), pidOf(nodes[0]))
	}
	fmt.Fprintf(w, "kafka      %s\nnodes      %d\ncluster id %s\ndir        %s\nbootstrap  %s\njars       %s\n",
		c.Version(), len(nodes), c.ClusterID(), output.Escape(c.Dir()), c.Bootstrap(), output.Escape(nodes[0].LibsDir()))
	if br := c.Bridge(); br != "" {
		fmt.Fprintf(w, "bridge     %s %s\n", br, c.Subnet())
	}
	printSecurity(w, c)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, b := range nodes {
		line := fmt.Sprintf("node %d\t%s\tpid %s\tkafka %s\tlog dirs %s", b.NodeID(), b.Addr(), pidOf(b), b.Version(), output.Escape(strings.Join(b.LogDirs(), ",")))
		if ns := b.Netns(); ns != "" {
			line += "\tnetns " + ns + "\thost if " + b.HostIf()
		}
		if mnt := b.MountPoint(); mnt != "" {
			line += fmt.Sprintf("\tfs %s %s on %s", b.FSType(), b.Device(), output.Escape(mnt))
		}
		if a := b.SSLAddr(); a != "" {
			line += "\tssl " + a + "\tsasl_ssl " + b.SASLSSLAddr()
		}
		if p := b.RequestLogPath(); p != "" {
			line += "\trequests " + output.Escape(p)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// printSecurity prints the SSL and SASL_SSL listeners of a cluster started
// with --tls, the CA, the client properties files and the users' names,
// and where their passwords are: never the passwords themselves.
func printSecurity(w io.Writer, c *lab.Cluster) {
	b := c.Brokers()[0]
	if b.SecurityDir() == "" {
		return
	}
	fmt.Fprintf(w, "ssl        %s\nsasl_ssl   %s\nca         %s\n", c.SSLBootstrap(), c.SASLSSLBootstrap(), output.Escape(b.CAFile()))
	for _, m := range []struct{ key, mech string }{{"ssl", ""}, {"plain", lab.MechanismPlain}, {"scram", lab.MechanismSCRAM}} {
		fmt.Fprintf(w, "client     %-5s %s\n", m.key, output.Escape(b.ClientPropertiesFile(m.mech)))
	}
	if users, err := b.Users(); err == nil {
		fmt.Fprintf(w, "users      %s, %s (passwords in %s)\n", users.Plain, users.SCRAM, output.Escape(filepath.Join(b.SecurityDir(), lab.UsersFile)))
	} else {
		fmt.Fprintf(w, "users      %s\n", output.Escape(err.Error()))
	}
}

func pidOf(b *lab.Broker) string {
	if b.Running() {
		return fmt.Sprint(b.PID())
	}
	return "- (stopped)"
}
