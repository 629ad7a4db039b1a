package lab

import (
	"fmt"
	"net"
	"slices"
	"strconv"
)

// freePorts returns n distinct free TCP ports on 127.0.0.1, none of them
// in avoid (ports reserved but not bound right now, like the controller
// port of a stopped broker). All listeners are held until every port is
// picked so the kernel cannot hand out the same port twice; another process
// may still grab one before the broker binds it, which StartBroker handles
// by retrying.
func freePorts(n int, avoid ...int) ([]int, error) {
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries > n+10 {
			return nil, fmt.Errorf("lab: pick free port: kernel keeps returning reserved ports %v", avoid)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("lab: pick free port: %w", err)
		}
		defer l.Close()
		if p := l.Addr().(*net.TCPAddr).Port; !slices.Contains(avoid, p) {
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// checkPortFree fails early with a clear message when a requested port is
// taken, instead of a bind error buried in broker.out.
func checkPortFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("lab: port %d: %w", port, err)
	}
	return l.Close()
}

func portOf(addr string) (int, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("lab: address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return 0, fmt.Errorf("lab: address %q: %w", addr, err)
	}
	return port, nil
}

// nodeAddr is host:port.
func nodeAddr(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
