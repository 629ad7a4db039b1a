package lab

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The accessors of a broker's and a cluster's SSL and SASL_SSL listeners
// (BrokerConfig.Security), and the client properties for them.

// errNoSecurity is returned by the accessors of a broker started without
// Security.
func errNoSecurity(dir string) error {
	return fmt.Errorf("lab: broker in %s has no SSL and SASL_SSL listeners (started without Security)", dir)
}

// SSLAddr is the SSL listener's address (as Addr is PLAINTEXT's), "" without
// Security.
func (b *Broker) SSLAddr() string { return b.st.SSLAddr }

// SASLSSLAddr is the SASL_SSL listener's address, "" without Security.
func (b *Broker) SASLSSLAddr() string { return b.st.SASLSSLAddr }

// SecurityDir is SecurityConfig.Dir of the broker's last start, "" without
// Security.
func (b *Broker) SecurityDir() string { return b.st.TLSDir }

// CAFile is the PEM file of the CA the broker's certificate is signed by
// (SecurityDir/ca.pem), for clients that do not read Java trust stores;
// "" without Security.
func (b *Broker) CAFile() string {
	if b.st.TLSDir == "" {
		return ""
	}
	return filepath.Join(b.st.TLSDir, CAFile)
}

// ClientPropertiesFile is the client properties file a start wrote for
// mechanism ("" for the SSL listener, MechanismPlain, MechanismSCRAM),
// naming every node of the cluster in bootstrap.servers; "" without
// Security or for an unknown mechanism.
func (b *Broker) ClientPropertiesFile(mechanism string) string {
	if b.st.TLSDir == "" {
		return ""
	}
	return clientPropertiesPath(b.st.TLSDir, mechanism)
}

func clientPropertiesPath(dir, mechanism string) string {
	switch mechanism {
	case "":
		return filepath.Join(dir, ClientSSLFile)
	case MechanismPlain:
		return filepath.Join(dir, ClientSASLPlainFile)
	case MechanismSCRAM:
		return filepath.Join(dir, ClientSASLSCRAMFile)
	}
	return ""
}

// Users returns the SASL users of the broker's SASL_SSL listener, with
// their passwords.
func (b *Broker) Users() (Users, error) {
	if b.st.TLSDir == "" {
		return Users{}, errNoSecurity(b.dir)
	}
	return readUsers(b.st.TLSDir)
}

// TLSConfig returns a client TLS config that trusts the broker's CA (and
// only it), for Go clients (kgo.DialTLSConfig).
func (b *Broker) TLSConfig() (*tls.Config, error) {
	if b.st.TLSDir == "" {
		return nil, errNoSecurity(b.dir)
	}
	return TLSClientConfig(b.CAFile())
}

// TLSClientConfig returns a client TLS config trusting only the CA
// certificates in the PEM file caFile (e.g. Broker.CAFile), TLS 1.2 or
// later.
func TLSClientConfig(caFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("lab: CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("lab: CA: no certificate in %s", caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// ClientProperties returns Java client properties (security.protocol,
// the trust store, SASL) for talking to this broker as cs says, with
// bootstrap.servers naming this broker's listener. They hold passwords:
// write them with WriteClientProperties, not to a log.
func (b *Broker) ClientProperties(cs ClientSecurity) (string, error) {
	if b.st.TLSDir == "" {
		return "", errNoSecurity(b.dir)
	}
	addr := b.st.SSLAddr
	if cs.listener() == ListenerSASLSSL {
		addr = b.st.SASLSSLAddr
	}
	return clientProperties(b.st.TLSDir, []string{addr}, cs)
}

// WriteClientProperties writes ClientProperties(cs) to path, mode 0600.
func (b *Broker) WriteClientProperties(path string, cs ClientSecurity) error {
	p, err := b.ClientProperties(cs)
	if err != nil {
		return err
	}
	return writeSecret(path, []byte(p))
}

// SSLBootstrap is every node's SSL address, comma-separated; "" without
// Security.
func (c *Cluster) SSLBootstrap() string {
	return c.joinAddrs(func(b *Broker) string { return b.SSLAddr() })
}

// SASLSSLBootstrap is every node's SASL_SSL address, comma-separated; ""
// without Security.
func (c *Cluster) SASLSSLBootstrap() string {
	return c.joinAddrs(func(b *Broker) string { return b.SASLSSLAddr() })
}

func (c *Cluster) joinAddrs(addr func(*Broker) string) string {
	var addrs []string
	for _, b := range c.nodes {
		if a := addr(b); a != "" {
			addrs = append(addrs, a)
		}
	}
	return strings.Join(addrs, ",")
}

// ClientProperties is Broker.ClientProperties with every node in
// bootstrap.servers.
func (c *Cluster) ClientProperties(cs ClientSecurity) (string, error) {
	return clusterClientProperties(c.nodes, cs)
}

// WriteClientProperties writes ClientProperties(cs) to path, mode 0600.
func (c *Cluster) WriteClientProperties(path string, cs ClientSecurity) error {
	p, err := c.ClientProperties(cs)
	if err != nil {
		return err
	}
	return writeSecret(path, []byte(p))
}

func clusterClientProperties(nodes []*Broker, cs ClientSecurity) (string, error) {
	dir := nodes[0].st.TLSDir
	if dir == "" {
		return "", errNoSecurity(nodes[0].dir)
	}
	addrs := make([]string, len(nodes))
	for i, b := range nodes {
		addrs[i] = b.st.SSLAddr
		if cs.listener() == ListenerSASLSSL {
			addrs[i] = b.st.SASLSSLAddr
		}
	}
	return clientProperties(dir, addrs, cs)
}

// clientProperties renders the Java client properties of cs for the
// brokers at addrs, from the trust store and users in dir.
func clientProperties(dir string, addrs []string, cs ClientSecurity) (string, error) {
	if err := cs.check(); err != nil {
		return "", err
	}
	tsPass, err := readSecret(filepath.Join(dir, trustStorePassFile))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# Written by kscope internal/lab. Holds passwords: keep it private (mode 0600).\n")
	prop := func(k, v string) { fmt.Fprintf(&b, "%s=%s\n", escapeProp(k), escapeProp(v)) }
	prop("bootstrap.servers", strings.Join(addrs, ","))
	prop("security.protocol", cs.listener())
	prop("ssl.truststore.type", "PKCS12")
	prop("ssl.truststore.location", filepath.Join(dir, TrustStoreFile))
	prop("ssl.truststore.password", tsPass)
	if cs.TLSVersion != "" {
		prop("ssl.enabled.protocols", cs.TLSVersion)
		prop("ssl.protocol", cs.TLSVersion)
	}
	if cs.Mechanism != "" {
		users, err := readUsers(dir)
		if err != nil {
			return "", err
		}
		u, err := users.ByMechanism(cs.Mechanism)
		if err != nil {
			return "", err
		}
		prop("sasl.mechanism", u.Mechanism)
		prop("sasl.jaas.config", loginModule(u.Mechanism)+` required username="`+u.Name+`" password="`+u.Password+`";`)
	}
	return b.String(), nil
}

// loginModule is the JAAS login module of a SASL mechanism.
func loginModule(mechanism string) string {
	if mechanism == MechanismPlain {
		return "org.apache.kafka.common.security.plain.PlainLoginModule"
	}
	return "org.apache.kafka.common.security.scram.ScramLoginModule"
}

// writeClientFiles writes the three client properties files of nodes'
// SecurityDir: SSL, SASL_SSL with PLAIN and with SCRAM-SHA-512, each
// naming every node.
func writeClientFiles(nodes []*Broker) error {
	dir := nodes[0].st.TLSDir
	if dir == "" {
		return nil
	}
	var errs []error
	for _, m := range []string{"", MechanismPlain, MechanismSCRAM} {
		p, err := clusterClientProperties(nodes, ClientSecurity{Mechanism: m})
		if err == nil {
			err = writeSecret(clientPropertiesPath(dir, m), []byte(p))
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lab: client properties: %w", err)
	}
	return nil
}
