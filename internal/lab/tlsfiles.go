package lab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// TLS material of the SSL and SASL_SSL listeners (SecurityConfig): a CA
// and a trust store per SecurityConfig.Dir, a key store per node, all
// made with keytool.

// Certificates: the CA and each node's key pair are RSA 2048, valid ten
// years (a lab's material is kept until someone removes it).
const (
	keyAlg       = "RSA"
	keySize      = "2048"
	certDays     = "3650"
	caAlias      = "ca"
	brokerAlias  = "broker"
	envCAPass    = "KSCOPE_LAB_CA_PASS"
	envStorePass = "KSCOPE_LAB_STORE_PASS"
)

// sharedTLS is one SecurityConfig.Dir: its CA, trust store and users.
type sharedTLS struct {
	dir    string
	caPass string
	caSum  string // sha256 of ca.pem: a node's certificate signed by another CA is made again
	users  Users
}

// nodeTLS is what one node's SSL and SASL_SSL listeners are configured
// with.
type nodeTLS struct {
	keyStore, keyStorePass string
	shared                 *sharedTLS
}

// keyStoreInfo records, next to a node's key store, what its certificate
// was made for; a start that wants something else makes it again.
type keyStoreInfo struct {
	SAN string `json:"san"` // keytool's -ext value, "san=ip:127.0.0.1,dns:localhost,..."
	CA  string `json:"ca"`  // sha256 of the signing CA's ca.pem
}

// ensureTLS returns every node's TLS material (nil for a node without
// Security), making what is missing: the CA, trust store and users of
// each SecurityConfig.Dir, and each node's key store in its Dir/tls with
// a certificate for 127.0.0.1, localhost, hosts[i] and its AdvertisedHost.
func ensureTLS(ctx context.Context, cfgs []BrokerConfig, hosts []string) ([]*nodeTLS, error) {
	out := make([]*nodeTLS, len(cfgs))
	if !slices.ContainsFunc(cfgs, func(c BrokerConfig) bool { return c.Security != nil }) {
		return out, nil
	}
	kt, err := newKeytool()
	if err != nil {
		return nil, err
	}
	shared := map[string]*sharedTLS{}
	for _, cfg := range cfgs {
		if cfg.Security == nil || shared[cfg.Security.Dir] != nil {
			continue
		}
		if shared[cfg.Security.Dir], err = ensureShared(ctx, kt, cfg.Security.Dir); err != nil {
			return nil, err
		}
	}
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		if cfg.Security == nil {
			continue
		}
		wg.Go(func() {
			san := sanExt(hosts[i], cfg.AdvertisedHost)
			out[i], errs[i] = ensureKeyStore(ctx, kt, shared[cfg.Security.Dir], filepath.Join(cfg.Dir, TLSDirName), i+1, san)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// sanExt is keytool's subjectAltName extension for a node at host (and
// advertised as advertised, when set): 127.0.0.1 and localhost always.
func sanExt(host, advertised string) string {
	names := []string{"ip:127.0.0.1", "dns:localhost"}
	for _, h := range []string{host, advertised} {
		n := "dns:" + h
		if net.ParseIP(h) != nil {
			n = "ip:" + h
		}
		if h != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return "san=" + strings.Join(names, ",")
}

// ensureShared returns dir's CA, trust store and users, making the CA
// (and with it the trust store) when any of its files is missing, the
// trust store when any of its files is, and the users when users.json is.
func ensureShared(ctx context.Context, kt keytool, dir string) (*sharedTLS, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: TLS dir: %w", err)
	}
	caP12, caPem, caPw := filepath.Join(dir, caKeyStoreFile), filepath.Join(dir, CAFile), filepath.Join(dir, caPasswordFile)
	ts, tsPw := filepath.Join(dir, TrustStoreFile), filepath.Join(dir, trustStorePassFile)
	if !allExist(caP12, caPem, caPw) {
		if err := removeFiles(caP12, caPem, caPw, ts, tsPw); err != nil {
			return nil, err
		}
		pass, _, err := passwordFile(caPw)
		if err != nil {
			return nil, err
		}
		env := map[string]string{envCAPass: pass}
		if err := kt.run(ctx, env, "-genkeypair", "-alias", caAlias, "-keyalg", keyAlg, "-keysize", keySize,
			"-dname", "CN=kscope lab CA", "-ext", "bc:c", "-ext", "ku:c=keyCertSign,cRLSign", "-validity", certDays,
			"-storetype", "PKCS12", "-keystore", caP12, "-storepass:env", envCAPass); err != nil {
			return nil, err
		}
		if err := os.Chmod(caP12, 0o600); err != nil {
			return nil, fmt.Errorf("lab: CA: %w", err)
		}
		if err := kt.run(ctx, env, "-exportcert", "-rfc", "-alias", caAlias, "-keystore", caP12,
			"-storepass:env", envCAPass, "-file", caPem); err != nil {
			return nil, err
		}
	}
	caPass, err := readSecret(caPw)
	if err != nil {
		return nil, err
	}
	if !allExist(ts, tsPw) {
		if err := removeFiles(ts, tsPw); err != nil {
			return nil, err
		}
		pass, _, err := passwordFile(tsPw)
		if err != nil {
			return nil, err
		}
		if err := kt.run(ctx, map[string]string{envStorePass: pass}, "-importcert", "-noprompt", "-alias", caAlias,
			"-file", caPem, "-storetype", "PKCS12", "-keystore", ts, "-storepass:env", envStorePass); err != nil {
			return nil, err
		}
	}
	pem, err := os.ReadFile(caPem)
	if err != nil {
		return nil, fmt.Errorf("lab: CA: %w", err)
	}
	sum := sha256.Sum256(pem)
	users, err := ensureUsers(dir)
	if err != nil {
		return nil, err
	}
	return &sharedTLS{dir: dir, caPass: caPass, caSum: hex.EncodeToString(sum[:]), users: users}, nil
}

// ensureKeyStore returns node id's key store in dir, making it (a key
// pair, its certificate signed by sh's CA for san, the CA certificate)
// unless the one there was made for the same san and CA.
func ensureKeyStore(ctx context.Context, kt keytool, sh *sharedTLS, dir string, id int, san string) (*nodeTLS, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: TLS dir: %w", err)
	}
	ks, pwFile, infoFile := filepath.Join(dir, keyStoreFile), filepath.Join(dir, keyStorePassFile), filepath.Join(dir, keyStoreInfoFile)
	want := keyStoreInfo{SAN: san, CA: sh.caSum}
	if got, err := readKeyStoreInfo(infoFile); err == nil && got == want && allExist(ks, pwFile) {
		pass, err := readSecret(pwFile)
		if err != nil {
			return nil, err
		}
		return &nodeTLS{keyStore: ks, keyStorePass: pass, shared: sh}, nil
	}
	csr, crt := filepath.Join(dir, "broker.csr"), filepath.Join(dir, "broker.crt")
	if err := removeFiles(ks, pwFile, infoFile, csr, crt); err != nil {
		return nil, err
	}
	pass, _, err := passwordFile(pwFile)
	if err != nil {
		return nil, err
	}
	env := map[string]string{envStorePass: pass, envCAPass: sh.caPass}
	store := []string{"-keystore", ks, "-storepass:env", envStorePass}
	steps := [][]string{
		append([]string{"-genkeypair", "-alias", brokerAlias, "-keyalg", keyAlg, "-keysize", keySize,
			"-dname", "CN=kscope lab broker " + strconv.Itoa(id), "-validity", certDays, "-storetype", "PKCS12"}, store...),
		append([]string{"-certreq", "-alias", brokerAlias, "-file", csr}, store...),
		{"-gencert", "-alias", caAlias, "-keystore", filepath.Join(sh.dir, caKeyStoreFile), "-storepass:env", envCAPass,
			"-infile", csr, "-outfile", crt, "-rfc", "-validity", certDays,
			"-ext", san, "-ext", "ku:c=digitalSignature,keyEncipherment", "-ext", "eku=serverAuth"},
		append([]string{"-importcert", "-noprompt", "-alias", caAlias, "-file", filepath.Join(sh.dir, CAFile)}, store...),
		append([]string{"-importcert", "-noprompt", "-alias", brokerAlias, "-file", crt}, store...),
	}
	for _, args := range steps {
		if err := kt.run(ctx, env, args...); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(ks, 0o600); err != nil {
		return nil, fmt.Errorf("lab: key store: %w", err)
	}
	if err := removeFiles(csr, crt); err != nil {
		return nil, err
	}
	b, err := json.Marshal(want)
	if err != nil {
		return nil, fmt.Errorf("lab: key store: %w", err)
	}
	if err := os.WriteFile(infoFile, append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("lab: key store: %w", err)
	}
	return &nodeTLS{keyStore: ks, keyStorePass: pass, shared: sh}, nil
}

func readKeyStoreInfo(path string) (keyStoreInfo, error) {
	var info keyStoreInfo
	b, err := os.ReadFile(path)
	if err != nil {
		return info, err
	}
	return info, json.Unmarshal(b, &info)
}

func allExist(paths ...string) bool {
	for _, p := range paths {
		if !fileExists(p) {
			return false
		}
	}
	return true
}

func removeFiles(paths ...string) error {
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("lab: %w", err)
		}
	}
	return nil
}

// serverProps are the broker settings of t's listeners: the key store of
// both, the SASL mechanisms of SASL_SSL, its PLAIN user (in the JAAS
// config) and the SCRAM login module (its users are in the metadata). No
// client authentication by certificate.
func (t *nodeTLS) serverProps() map[string]string {
	plain := t.shared.users.Plain
	return map[string]string{
		"ssl.keystore.type":       "PKCS12",
		"ssl.keystore.location":   t.keyStore,
		"ssl.keystore.password":   t.keyStorePass,
		"ssl.key.password":        t.keyStorePass,
		"ssl.client.auth":         "none",
		"sasl.enabled.mechanisms": MechanismPlain + "," + MechanismSCRAM,
		"listener.name.sasl_ssl.plain.sasl.jaas.config": loginModule(MechanismPlain) +
			` required user_` + plain.Name + `="` + plain.Password + `";`,
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": loginModule(MechanismSCRAM) + " required;",
	}
}
