package lab

// Isolation of a cluster's nodes from one another (ClusterConfig.Netns and
// .FS): the plan, recorded in cluster.json before anything is made (so a
// stop from another process, or a later start, finds it even when the
// process that made it was killed half-way); setUp, which makes it;
// tearDown, which removes it once the nodes have stopped and can run any
// number of times; Cleanup, the same for `kscope lab broker stop` when no
// node runs. The mechanics are in netns.go and loopfs.go.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/slowdisk"
)

// nodePlace is where one node of a start runs and what it was given: with
// Netns its address, namespace and host-side link, with FS its file
// system. The zero value is 127.0.0.1 in the root namespace, with the log
// dir on whatever file system holds it.
type nodePlace struct {
	IP, Netns, HostIf          string
	MountPoint, Device, FSType string
}

// isolation is a cluster's isolation plan and what of it exists; st is
// cluster.json's content, with Net or FS set.
type isolation struct {
	dir string
	st  clusterState
	// profile and seed are ClusterConfig.Device and DeviceSeed (nil:
	// none); emulators the running emulated devices, by node index.
	profile   *slowdisk.Profile
	seed      uint64
	emulators []*slowdisk.Device
}

// planIsolation returns the isolation cfg asks for (nil for none): the
// one recorded in dir's cluster.json for a restart (same names, subnet and
// images), else a new one. A restart must ask for what the cluster was
// started with: the log dirs' data is on the images, and the node
// addresses are in the quorum's config.
func planIsolation(dir string, n int, cfg ClusterConfig, prev *clusterState, existing bool) (*isolation, error) {
	if err := checkIsolationMatch(dir, cfg, prev, existing); err != nil {
		return nil, err
	}
	if !cfg.Netns && cfg.FS == "" {
		return nil, nil
	}
	if err := checkIsolationTools(cfg.Netns, cfg.FS); err != nil {
		return nil, err
	}
	iso := &isolation{dir: dir}
	if prev != nil {
		iso.st = *prev // cluster id, addresses: what attach reads
	}
	var err error
	if cfg.Netns && iso.st.Net == nil {
		if iso.st.Net, err = newClusterNet(n); err != nil {
			return nil, err
		}
	}
	if cfg.FS != "" && iso.st.FS == nil {
		iso.st.FS = &clusterFS{Type: cfg.FS, SizeMB: cfg.FSSizeMB}
		if iso.st.FS.SizeMB <= 0 {
			iso.st.FS.SizeMB = DefaultFSSizeMB
		}
	}
	if err := iso.planDevice(cfg); err != nil {
		return nil, err
	}
	iso.st.Brokers = n
	return iso, iso.planNodes(n)
}

// planNodes derives every node's names, address, image and mount point,
// keeping what cluster.json says about existing images.
func (iso *isolation) planNodes(n int) error {
	nodes := make([]clusterNode, n)
	for i := range nodes {
		id, dir := i+1, iso.dir
		if n > 1 {
			dir = NodeDir(iso.dir, id)
		}
		if i < len(iso.st.Nodes) {
			nodes[i] = iso.st.Nodes[i]
		}
		old := nodes[i].FS
		rel, err := filepath.Rel(iso.dir, dir)
		if err != nil {
			return fmt.Errorf("lab: cluster state: %w", err)
		}
		nodes[i].ID, nodes[i].Dir, nodes[i].Net, nodes[i].FS = id, rel, nil, nil
		if cn := iso.st.Net; cn != nil {
			nn, err := cn.node(id)
			if err != nil {
				return err
			}
			nodes[i].Net = &nn
		}
		if iso.st.FS != nil {
			f := &nodeFS{Image: filepath.Join(dir, FSImageFile), MountPoint: filepath.Join(dir, "data")}
			if iso.profile != nil || (old != nil && old.EmulatorDir != "") {
				// Kept without a profile too: what a killed start on an
				// emulated device left is found and removed.
				f.EmulatorDir = filepath.Join(dir, EmulatorDirName)
			}
			if old != nil {
				// By node, not by path: a moved dir must not have its
				// images formatted again.
				f.Device, f.Formatted = old.Device, old.Formatted
			}
			nodes[i].FS = f
		}
	}
	iso.st.Nodes = nodes
	return nil
}

// checkIsolationMatch fails when an existing cluster (existing: in
// cluster.json prev, or a single broker's broker.json) was started with
// other Netns or FS than cfg asks for.
func checkIsolationMatch(dir string, cfg ClusterConfig, prev *clusterState, existing bool) error {
	var recNetns bool
	var recFS string
	if prev != nil {
		recNetns = prev.Net != nil
		if prev.FS != nil {
			recFS = prev.FS.Type
		}
	}
	if existing && (cfg.Netns != recNetns || cfg.FS != recFS) {
		return fmt.Errorf("lab: %s holds a cluster started with %s, not %s: restart it the same way, or stop it and remove the dir to start afresh",
			dir, describeIsolation(recNetns, recFS), describeIsolation(cfg.Netns, cfg.FS))
	}
	return nil
}

func describeIsolation(netns bool, fs string) string {
	var parts []string
	if netns {
		parts = append(parts, "Netns (--netns)")
	}
	if fs != "" {
		parts = append(parts, "FS "+fs+" (--fs "+fs+")")
	}
	if len(parts) == 0 {
		return "neither Netns nor FS"
	}
	return strings.Join(parts, " and ")
}

// checkIsolationTools fails early, with a message naming what is missing,
// instead of half-way through making things.
func checkIsolationTools(netns bool, fs string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("lab: Netns and FS need root (euid %d)", os.Geteuid())
	}
	var tools []string
	if netns {
		tools = append(tools, "ip")
	}
	if fs != "" {
		if err := checkFSType(fs); err != nil {
			return err
		}
		tools = append(tools, "losetup", "mkfs."+fs)
	}
	for _, t := range tools {
		if _, err := lookTool(t); err != nil {
			return err
		}
	}
	return nil
}

// save writes cluster.json.
func (iso *isolation) save() error { return writeClusterState(iso.dir, iso.st) }

func (iso *isolation) owner() string { return linkOwner(iso.dir) }

// setUp makes the plan: the bridge and every node's namespace and veth
// pair, then every node's file system. What an earlier start left (a
// killed process, a failed stop) is removed first, so every name is free
// again; that also records the plan before anything is made. On an error
// the caller tears down.
func (iso *isolation) setUp(ctx context.Context) error {
	if err := iso.tearDown(); err != nil {
		return fmt.Errorf("lab: remove what the last start of %s left: %w", iso.dir, err)
	}
	owner := iso.owner()
	if cn := iso.st.Net; cn != nil {
		if err := cn.checkSubnetFree(); err != nil {
			return err
		}
		if err := cn.createBridge(owner); err != nil {
			return err
		}
		for _, node := range iso.st.Nodes {
			if err := cn.createNode(*node.Net, owner); err != nil {
				return err
			}
		}
	}
	if cf := iso.st.FS; cf != nil {
		for _, node := range iso.st.Nodes {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("lab: set up file systems: %w", err)
			}
			if err := node.FS.setUp(cf.Type, cf.SizeMB, iso.save, iso.attacher(ctx, node)); err != nil {
				return err
			}
		}
	}
	return nil
}

// tearDown removes what setUp made and is still there: file systems
// (thawed, unmounted, loops detached; the images stay, they are the data),
// veth pairs, namespaces, the bridge. The nodes must have stopped.
func (iso *isolation) tearDown() error {
	owner := iso.owner()
	var errs []error
	for i, node := range iso.st.Nodes {
		if node.FS != nil {
			errs = append(errs, node.FS.tearDown(iso.emulator(i)))
		}
		if node.Net != nil {
			errs = append(errs, removeNode(*node.Net, owner))
		}
	}
	if cn := iso.st.Net; cn != nil {
		errs = append(errs, cn.removeBridge(owner))
	}
	errs = append(errs, iso.save())
	return errors.Join(errs...)
}

// EmulatorDirName is where, in a node's dir, an emulated device's FUSE
// file system is mounted (ClusterConfig.Device).
const EmulatorDirName = "fs.dev"

// planDevice takes ClusterConfig.Device into the plan: it needs FS, and
// refuses Detach (the emulator lives in this process).
func (iso *isolation) planDevice(cfg ClusterConfig) error {
	if iso.st.FS != nil {
		iso.st.FS.Device = ""
	}
	if cfg.Device == nil {
		return nil
	}
	switch {
	case cfg.FS == "":
		return errors.New("lab: ClusterConfig.Device needs FS (a file system on the emulated device)")
	case cfg.Detach:
		return errors.New("lab: ClusterConfig.Device cannot be Detach: the emulated device lives in this process")
	}
	if err := cfg.Device.Validate(); err != nil {
		return fmt.Errorf("lab: device profile %s: %w", cfg.Device.Name, err)
	}
	iso.profile, iso.seed, iso.st.FS.Device = cfg.Device, cfg.DeviceSeed, cfg.Device.Name
	return nil
}

// attacher returns how node's image is attached to a loop device: the
// image's own (attachLoop), or an emulated device's.
func (iso *isolation) attacher(ctx context.Context, node clusterNode) func(string) (string, error) {
	if iso.profile == nil || node.FS.EmulatorDir == "" {
		return attachLoop
	}
	return func(image string) (string, error) {
		if err := os.MkdirAll(node.FS.EmulatorDir, 0o755); err != nil {
			return "", fmt.Errorf("lab: emulated device: %w", err)
		}
		dev, err := slowdisk.Start(ctx, slowdisk.Config{Image: image, MountDir: node.FS.EmulatorDir,
			Profile: *iso.profile, Seed: iso.seed + uint64(node.ID)})
		if err != nil {
			return "", fmt.Errorf("lab: node %d: %w", node.ID, err)
		}
		if len(iso.emulators) < len(iso.st.Nodes) {
			iso.emulators = make([]*slowdisk.Device, len(iso.st.Nodes))
		}
		iso.emulators[node.ID-1] = dev
		return dev.Loop(), nil
	}
}

// emulator is node i's emulated device run by this process, or nil.
func (iso *isolation) emulator(i int) *slowdisk.Device {
	if i < len(iso.emulators) {
		return iso.emulators[i]
	}
	return nil
}

// thaw thaws every node's mounted file system: a JVM blocked on a frozen
// one would not stop.
func (iso *isolation) thaw() {
	for _, node := range iso.st.Nodes {
		if node.FS != nil && isMountPoint(node.FS.MountPoint) {
			_ = ThawFS(node.FS.MountPoint) // EINVAL when not frozen
		}
	}
}

// places are the nodes' places, for startNodes (after setUp: the loop
// devices are known).
func (iso *isolation) places() []nodePlace {
	out := make([]nodePlace, len(iso.st.Nodes))
	for i, node := range iso.st.Nodes {
		if nn := node.Net; nn != nil {
			out[i].IP, out[i].Netns, out[i].HostIf = nn.IP, nn.Netns, nn.HostIf
		}
		if f := node.FS; f != nil {
			out[i].MountPoint, out[i].Device, out[i].FSType = f.MountPoint, f.Device, iso.st.FS.Type
		}
	}
	return out
}

// running returns a node of the cluster whose JVM is alive (by its
// broker.json), or pid 0: nothing may be torn down under it.
func (iso *isolation) running() (dir string, pid int) {
	for _, node := range iso.st.Nodes {
		d := filepath.Join(iso.dir, node.Dir)
		if st, err := readState(d); err == nil && BrokerAlive(st.PID) {
			return d, st.PID
		}
	}
	return "", 0
}

// Cleanup removes what a cluster started with Netns or FS in dir left:
// it stops any of its nodes still running (a start killed half-way may
// leave one that Attach does not find), then thaws and unmounts the nodes'
// file systems, detaches their loop devices and deletes the namespaces,
// veth pairs and bridge, as cluster.json records them. The images stay
// (they hold the data). Nothing left, or a cluster without Netns and FS, is
// a no-op. `kscope lab broker stop` runs it when no node runs.
func Cleanup(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("lab: cleanup: %w", err)
	}
	cs, err := readClusterState(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if cs.Net == nil && cs.FS == nil {
		return nil
	}
	iso := &isolation{dir: abs, st: cs}
	iso.thaw()
	var errs []error
	for _, node := range cs.Nodes {
		if b, err := attachNode(filepath.Join(abs, node.Dir)); err == nil && b.Running() {
			errs = append(errs, b.Stop())
		}
	}
	errs = append(errs, iso.tearDown())
	return errors.Join(errs...)
}

// lookTool finds a system tool on PATH or in the sbin dirs, which a
// non-login root shell may lack on PATH.
func lookTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("lab: %s not found (on PATH or in /usr/sbin, /sbin)", name)
}

// runTool runs a system tool, bounded by two minutes, and returns its
// stdout; the error carries stderr. It takes no context on purpose:
// removal must work after the caller's context was cancelled.
func runTool(name string, args ...string) (string, error) {
	path, err := lookTool(name)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("lab: %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
