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

// securePorts are a node's SSL and SASL_SSL ports, zero without Security.
type securePorts struct{ ssl, sasl int }

// pickSecurePorts returns the SSL and SASL_SSL ports of every node with
// Security, as pickPorts does PLAINTEXT's: the configured port, else the
// previous start's when still free, else a free one; none of them in
// taken (the nodes' other ports).
func pickSecurePorts(cfgs []BrokerConfig, prev []*state, taken []int) ([]securePorts, error) {
	out := make([]securePorts, len(cfgs))
	missing := 0
	for i, cfg := range cfgs {
		if cfg.Security == nil {
			continue
		}
		var prevAddrs [2]string
		if prev[i] != nil {
			prevAddrs = [2]string{prev[i].SSLAddr, prev[i].SASLSSLAddr}
		}
		want := [2]int{cfg.Security.SSLPort, cfg.Security.SASLSSLPort}
		for k, p := range []*int{&out[i].ssl, &out[i].sasl} {
			*p = want[k]
			if *p != 0 {
				if err := checkPortFree(*p); err != nil {
					return nil, err
				}
			} else if q, err := portOf(prevAddrs[k]); err == nil && !slices.Contains(taken, q) && checkPortFree(q) == nil {
				*p = q
			}
			if *p == 0 {
				missing++
				continue
			}
			if slices.Contains(taken, *p) {
				return nil, fmt.Errorf("lab: port %d given to two listeners", *p)
			}
			taken = append(taken, *p)
		}
	}
	if missing == 0 {
		return out, nil
	}
	free, err := freePorts(missing, taken...)
	if err != nil {
		return nil, err
	}
	for i, cfg := range cfgs {
		if cfg.Security == nil {
			continue
		}
		for _, p := range []*int{&out[i].ssl, &out[i].sasl} {
			if *p == 0 {
				*p, free = free[0], free[1:]
			}
		}
	}
	return out, nil
}

// netnsSecurePorts returns the SSL and SASL_SSL ports of the nodes of a
// Netns cluster, each alone at its address: the configured ones
// (ClusterConfig defaults them to NetnsSSLPort and NetnsSASLSSLPort),
// which must differ from the node's PLAINTEXT and CONTROLLER ports.
func netnsSecurePorts(cfgs []BrokerConfig, ports, cports []int) ([]securePorts, error) {
	out := make([]securePorts, len(cfgs))
	for i, cfg := range cfgs {
		if cfg.Security == nil {
			continue
		}
		sp := securePorts{cfg.Security.SSLPort, cfg.Security.SASLSSLPort}
		all := []int{ports[i], cports[i], sp.ssl, sp.sasl}
		for k, p := range all {
			if p <= 0 || p > 65535 {
				return nil, fmt.Errorf("lab: node %d: port %d", i+1, p)
			}
			if slices.Contains(all[:k], p) {
				return nil, fmt.Errorf("lab: node %d: port %d given to two listeners", i+1, p)
			}
		}
		out[i] = sp
	}
	return out, nil
}
