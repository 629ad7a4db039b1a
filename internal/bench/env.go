package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kscope-dev/kscope/internal/hostinfo"
)

// environment describes where the run happens. The broker's version and
// the file systems of its log directories come from the broker process
// when it runs on this host (found by its listening port); otherwise the
// version is franz-go's guess from the ApiVersions answer and the file
// systems are left out.
func environment(ctx context.Context, adm *kgo.Client, bootstrap []string, versions *kmsg.ApiVersionsResponse) Environment {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	env := Environment{
		Kernel:    hostinfo.Kernel(),
		CPU:       cpuModel("/proc/cpuinfo"),
		CPUs:      runtime.NumCPU(),
		Bootstrap: append([]string(nil), bootstrap...),
	}
	env.Host, _ = os.Hostname()
	pid := localBrokerPID(bootstrap)
	if pid > 0 {
		if v, err := hostinfo.BrokerVersion(pid); err == nil {
			env.BrokerVersion = v
		}
		env.LogDirFS = logDirFS(ctx, adm, pid)
	}
	if env.BrokerVersion == "" && versions != nil {
		env.BrokerVersion = kversion.FromApiVersionsResponse(versions).VersionGuess()
	}
	return env
}

// cpuModel returns the first "model name" of /proc/cpuinfo.
func cpuModel(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// franzVersion names the franz-go module this binary was built with.
func franzVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/twmb/franz-go" {
				return "franz-go " + d.Version
			}
		}
	}
	return "franz-go"
}

// localBrokerPID returns the pid of the process listening on the first
// bootstrap address when that address is on this host, else 0.
func localBrokerPID(bootstrap []string) int {
	for _, addr := range bootstrap {
		host, portS, err := net.SplitHostPort(addr)
		if err != nil {
			continue
		}
		port, err := strconv.Atoi(portS)
		if err != nil || !isLocalHost(host) {
			continue
		}
		if pid := hostinfo.ListenerPID(port); pid > 0 {
			return pid
		}
	}
	return 0
}

func isLocalHost(host string) bool {
	if host == "localhost" || host == "" {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		ips, err := net.LookupIP(host)
		if err != nil || len(ips) == 0 {
			return false
		}
		ip = ips[0]
	}
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// logDirFS describes the file system under each of the broker's log
// directories (from DescribeLogDirs), as the broker process sees them.
func logDirFS(ctx context.Context, adm *kgo.Client, pid int) string {
	req := kmsg.NewPtrDescribeLogDirsRequest() // nil Topics: every log dir
	resp, err := req.RequestWith(ctx, adm)
	if err != nil {
		return ""
	}
	var out []string
	for _, d := range resp.Dirs {
		m, err := hostinfo.MountOf(pid, d.Dir)
		if err != nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s on %s (%s)", d.Dir, m.FSType, m.Source, m.Options))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}
