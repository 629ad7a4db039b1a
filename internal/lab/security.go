package lab

import "fmt"

// SecurityConfig adds two listeners beside PLAINTEXT (which stays the
// inter-broker listener and the readiness probe's): SSL (TLS, no client
// authentication) and SASL_SSL (TLS, then SASL PLAIN or SCRAM-SHA-512 as
// one of the lab's Users). The certificates are made with the JDK's
// keytool: one CA per Dir, and a key pair per node signed by it for
// 127.0.0.1, localhost, the node's own address and AdvertisedHost. Key
// stores, passwords and users are made once and reused by every later
// start; what is missing is made again (a missing CA: every certificate).
type SecurityConfig struct {
	// SSLPort and SASLSSLPort are the listeners' ports, bound like the
	// PLAINTEXT one (127.0.0.1, the node's address, or 0.0.0.0 with an
	// AdvertisedHost). 0 picks free ports, or keeps the last start's when
	// still free; in a cluster node i gets PORT+i-1; with
	// ClusterConfig.Netns every node uses NetnsSSLPort and
	// NetnsSASLSSLPort by default.
	SSLPort, SASLSSLPort int
	// Dir holds what all nodes share: the CA, the trust store, the users
	// and the client properties (see the *File constants); default
	// BrokerConfig.Dir/tls, for a cluster ClusterConfig.Dir/tls. Each
	// node's own key store is in its Dir/tls.
	Dir string
}

// Listener names (and security protocols) of a node with Security.
const (
	ListenerSSL     = "SSL"
	ListenerSASLSSL = "SASL_SSL"
)

// SASL mechanisms of the SASL_SSL listener.
const (
	MechanismPlain = "PLAIN"
	MechanismSCRAM = "SCRAM-SHA-512"
)

// TLS versions a client can be pinned to (ClientSecurity.TLSVersion).
const (
	TLSv12 = "TLSv1.2"
	TLSv13 = "TLSv1.3"
)

// Files in SecurityConfig.Dir (TLSDirName in a broker's or cluster's
// Dir). CAFile and TrustStoreFile hold no secret; the rest do and are
// mode 0600, as are the other files there and in a node's Dir/tls (the
// CA's and the node's key stores and their passwords) and, with
// Security, the node's server.properties.
const (
	TLSDirName          = "tls"
	CAFile              = "ca.pem"         // the CA certificate, for non-Java clients
	TrustStoreFile      = "truststore.p12" // the CA certificate as a PKCS12 trust store
	UsersFile           = "users.json"     // the SASL users and their passwords
	ClientSSLFile       = "client-ssl.properties"
	ClientSASLPlainFile = "client-sasl-plain.properties"
	ClientSASLSCRAMFile = "client-sasl-scram.properties"
)

// Files only the lab reads.
const (
	caKeyStoreFile     = "ca.p12" // the CA's private key, in SecurityConfig.Dir
	caPasswordFile     = "ca.password"
	trustStorePassFile = "truststore.password"
	keyStoreFile       = "broker.p12" // the node's key pair and certificate, in its Dir/tls
	keyStorePassFile   = "broker.password"
	keyStoreInfoFile   = "broker.p12.json" // what the certificate was made for
)

// The lab's SASL users, and the iterations of the SCRAM credential a
// restart stores.
const (
	defaultPlainUser = "kscope-plain"
	defaultSCRAMUser = "kscope-scram"
	scramIterations  = 8192
)

// User is a SASL user of the SASL_SSL listeners. Password is a secret:
// String and GoString leave it out, and kscope never prints it.
type User struct {
	Name      string `json:"name"`
	Mechanism string `json:"mechanism"` // MechanismPlain or MechanismSCRAM
	Password  string `json:"password"`
}

// String is the user's name and mechanism, without the password.
func (u User) String() string { return u.Name + " (" + u.Mechanism + ")" }

// GoString, for %#v, leaves the password out too.
func (u User) GoString() string {
	return fmt.Sprintf("lab.User{Name:%q, Mechanism:%q, Password:<redacted>}", u.Name, u.Mechanism)
}

// Users are the lab's SASL users, one per mechanism, stored in
// SecurityConfig.Dir/users.json (0600).
type Users struct {
	Plain User `json:"plain"`
	SCRAM User `json:"scram"`
}

// ByMechanism returns the user of mechanism (MechanismPlain or
// MechanismSCRAM).
func (u Users) ByMechanism(mechanism string) (User, error) {
	switch mechanism {
	case MechanismPlain:
		return u.Plain, nil
	case MechanismSCRAM:
		return u.SCRAM, nil
	}
	return User{}, fmt.Errorf("lab: SASL mechanism %q: want %s or %s", mechanism, MechanismPlain, MechanismSCRAM)
}

// ClientSecurity chooses a client's listener and TLS version for
// ClientProperties.
type ClientSecurity struct {
	// Mechanism is "" for the SSL listener (TLS only), else MechanismPlain
	// or MechanismSCRAM on the SASL_SSL listener as that mechanism's user.
	Mechanism string
	// TLSVersion pins the client to TLSv12 or TLSv13
	// (ssl.enabled.protocols and ssl.protocol); "" lets it negotiate.
	TLSVersion string
}

func (cs ClientSecurity) check() error {
	switch cs.Mechanism {
	case "", MechanismPlain, MechanismSCRAM:
	default:
		return fmt.Errorf("lab: SASL mechanism %q: want none, %s or %s", cs.Mechanism, MechanismPlain, MechanismSCRAM)
	}
	switch cs.TLSVersion {
	case "", TLSv12, TLSv13:
	default:
		return fmt.Errorf("lab: TLS version %q: want %s or %s", cs.TLSVersion, TLSv12, TLSv13)
	}
	return nil
}

// listener is the listener cs's client talks to.
func (cs ClientSecurity) listener() string {
	if cs.Mechanism == "" {
		return ListenerSSL
	}
	return ListenerSASLSSL
}
