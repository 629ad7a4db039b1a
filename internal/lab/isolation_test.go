package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClusterNetNodeNames(t *testing.T) {
	cn := &clusterNet{ID: "a1b2c3", Subnet: "10.70.5.0/24", Bridge: bridgePrefix + "a1b2c3", BridgeIP: "10.70.5.1"}
	for _, tc := range []struct {
		id                      int
		netns, hostIf, nsIf, ip string
	}{
		{1, "kscope-a1b2c3-1", "ksv1-a1b2c3", "ksn1-a1b2c3", "10.70.5.11"},
		{9, "kscope-a1b2c3-9", "ksv9-a1b2c3", "ksn9-a1b2c3", "10.70.5.19"},
		{42, "kscope-a1b2c3-42", "ksv42-a1b2c3", "ksn42-a1b2c3", "10.70.5.52"},
		{MaxNetnsNodes, "kscope-a1b2c3-200", "ksv200-a1b2c3", "ksn200-a1b2c3", "10.70.5.210"},
	} {
		nn, err := cn.node(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if nn != (nodeNet{Netns: tc.netns, HostIf: tc.hostIf, NsIf: tc.nsIf, IP: tc.ip}) {
			t.Errorf("node %d: %+v", tc.id, nn)
		}
		for _, ifname := range []string{nn.HostIf, nn.NsIf, cn.Bridge} {
			if len(ifname) > 15 { // IFNAMSIZ
				t.Errorf("node %d: interface name %q longer than 15", tc.id, ifname)
			}
		}
	}
	if _, err := (&clusterNet{ID: "x", Subnet: "bad"}).node(1); err == nil {
		t.Error("node of a bad subnet: no error")
	}
}

func TestServerPropertiesNetns(t *testing.T) {
	cfg, err := BrokerConfig{Dir: "/tmp/c/node-2"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	voters := votersAt([]string{"10.70.5.11:9093", "10.70.5.12:9093", "10.70.5.13:9093"})
	got := serverProperties(nodeSpec{cfg: cfg, id: 2, n: 3, version: KafkaVersion, port: 9092, cport: 9093, host: "10.70.5.12", voters: voters})
	for _, want := range []string{
		"listeners=PLAINTEXT://10.70.5.12:9092,CONTROLLER://10.70.5.12:9093\n",
		"advertised.listeners=PLAINTEXT://10.70.5.12:9092\n",
		"controller.quorum.voters=1@10.70.5.11:9093,2@10.70.5.12:9093,3@10.70.5.13:9093\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("server.properties lacks %q:\n%s", want, got)
		}
	}
}

func TestNetnsPorts(t *testing.T) {
	for _, tc := range []struct {
		name          string
		port          int
		prev          *state
		wantP, wantCP int
		wantErr       bool
	}{
		{"fresh", 9092, nil, 9092, 9093, false},
		{"other port", 19092, nil, 19092, 19093, false},
		{"restart keeps the controller port", 9092, &state{ControllerAddr: "10.70.5.11:40001"}, 9092, 40001, false},
		{"controller on the client port", 9093, &state{ControllerAddr: "10.70.5.11:9093"}, 0, 0, true},
		{"bad previous address", 9092, &state{ControllerAddr: "nonsense"}, 0, 0, true},
	} {
		ports, cports, err := netnsPorts([]BrokerConfig{{Port: tc.port}}, []*state{tc.prev})
		if tc.wantErr {
			if err == nil {
				t.Errorf("%s: no error", tc.name)
			}
			continue
		}
		if err != nil || ports[0] != tc.wantP || cports[0] != tc.wantCP {
			t.Errorf("%s: %v %v %v, want %d %d", tc.name, ports, cports, err, tc.wantP, tc.wantCP)
		}
	}
}

func TestCheckIsolationMatch(t *testing.T) {
	netns := &clusterState{Net: &clusterNet{ID: "a1b2c3"}}
	ext4 := &clusterState{FS: &clusterFS{Type: "ext4"}}
	for _, tc := range []struct {
		name     string
		cfg      ClusterConfig
		prev     *clusterState
		existing bool
		wantErr  bool
	}{
		{"new dir", ClusterConfig{Netns: true, FS: "xfs"}, nil, false, false},
		{"plain restart", ClusterConfig{}, &clusterState{}, true, false},
		{"single broker, then netns", ClusterConfig{Netns: true}, nil, true, true},
		{"netns restart", ClusterConfig{Netns: true}, netns, true, false},
		{"netns dropped", ClusterConfig{}, netns, true, true},
		{"fs restart", ClusterConfig{FS: "ext4"}, ext4, true, false},
		{"fs changed", ClusterConfig{FS: "xfs"}, ext4, true, true},
		{"fs dropped", ClusterConfig{}, ext4, true, true},
	} {
		err := checkIsolationMatch("/d", tc.cfg, tc.prev, tc.existing)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestPlanNodes: names and paths follow the node's dir (the cluster dir
// for one node), and what cluster.json says of an image is kept by node.
func TestPlanNodes(t *testing.T) {
	for _, tc := range []struct {
		n       int
		nodeDir string
	}{
		{1, "/d"},
		{3, "/d/node-3"},
	} {
		iso := &isolation{dir: "/d", st: clusterState{
			Net: &clusterNet{ID: "a1b2c3", Subnet: "10.70.5.0/24"},
			FS:  &clusterFS{Type: "ext4", SizeMB: 64},
		}}
		iso.st.Nodes = make([]clusterNode, tc.n)
		iso.st.Nodes[tc.n-1].FS = &nodeFS{Image: "/moved/fs.img", Formatted: true, Device: "/dev/loop7"}
		if err := iso.planNodes(tc.n); err != nil {
			t.Fatal(err)
		}
		last := iso.st.Nodes[tc.n-1]
		rel, _ := filepath.Rel("/d", tc.nodeDir)
		want := nodeFS{Image: filepath.Join(tc.nodeDir, FSImageFile), MountPoint: filepath.Join(tc.nodeDir, "data"), Device: "/dev/loop7", Formatted: true}
		if last.ID != tc.n || last.Dir != rel || last.Net == nil || *last.FS != want {
			t.Errorf("%d nodes: last %+v net %+v fs %+v, want fs %+v", tc.n, last, last.Net, last.FS, want)
		}
		pl := iso.places()[tc.n-1]
		if pl.IP != last.Net.IP || pl.HostIf != last.Net.HostIf || pl.MountPoint != want.MountPoint || pl.FSType != "ext4" {
			t.Errorf("%d nodes: place %+v", tc.n, pl)
		}
	}
}

func TestFSTypes(t *testing.T) {
	for _, tc := range []struct {
		fs   string
		ok   bool
		mkfs string
	}{
		{"ext4", true, "-q -F -E lazy_itable_init=0,lazy_journal_init=0"},
		{"xfs", true, "-q -f"},
		{"btrfs", false, ""},
		{"", false, ""},
	} {
		if err := checkFSType(tc.fs); (err == nil) != tc.ok {
			t.Errorf("checkFSType(%q) = %v", tc.fs, err)
		}
		if tc.ok && strings.Join(mkfsArgs(tc.fs), " ") != tc.mkfs {
			t.Errorf("mkfsArgs(%q) = %q", tc.fs, mkfsArgs(tc.fs))
		}
	}
}

func TestParsePrefix(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"10.70.5.7/24", "10.70.5.0/24", true},
		{"192.0.2.2", "192.0.2.2/32", true},
		{"default", "", false},
	} {
		p, ok := parsePrefix(tc.in)
		if ok != tc.ok || (ok && p.String() != tc.want) {
			t.Errorf("parsePrefix(%q) = %v, %v", tc.in, p, ok)
		}
	}
	if !isRouteType("local") || isRouteType("10.0.0.0/8") {
		t.Error("isRouteType")
	}
}

// TestDetectFS: an image already formatted is never formatted again, even
// when cluster.json does not say so.
func TestDetectFS(t *testing.T) {
	dir := t.TempDir()
	ext4 := make([]byte, 4096)
	ext4[1080], ext4[1081] = 0x53, 0xEF
	xfs := append([]byte("XFSB"), make([]byte, 4092)...)
	for _, tc := range []struct {
		name    string
		content []byte
		want    string
	}{
		{"zeros", make([]byte, 4096), ""},
		{"ext4", ext4, "ext4"},
		{"xfs", xfs, "xfs"},
		{"short", []byte("XFSB"), ""},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, tc.content, 0o600); err != nil {
			t.Fatal(err)
		}
		if got := detectFS(p); got != tc.want {
			t.Errorf("%s: detectFS = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := detectFS(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("missing: %q", got)
	}
}
