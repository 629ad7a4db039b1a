package tlsdecrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"hash"

	"golang.org/x/crypto/chacha20poly1305"
)

// suite is what decrypting a cipher suite's records needs: its AEAD, key
// and IV lengths, and the hash of its key schedule (TLS 1.3) or PRF (TLS
// 1.2).
type suite struct {
	id     uint16
	name   string
	keyLen int
	// ivLen is the fixed IV: 12 for TLS 1.3 and ChaCha20-Poly1305, 4 (the
	// salt) for TLS 1.2 AES-GCM, whose records carry the other 8 bytes.
	ivLen  int
	hash   func() hash.Hash
	chacha bool
}

// The suites a JDK 17+ broker negotiates by default, and the ECDHE/DHE
// AEAD suites of TLS 1.2.
var suites = map[uint16]suite{
	0x1301: {0x1301, "TLS_AES_128_GCM_SHA256", 16, 12, sha256.New, false},
	0x1302: {0x1302, "TLS_AES_256_GCM_SHA384", 32, 12, sha512.New384, false},
	0x1303: {0x1303, "TLS_CHACHA20_POLY1305_SHA256", 32, 12, sha256.New, true},
	0xC02B: {0xC02B, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", 16, 4, sha256.New, false},
	0xC02C: {0xC02C, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", 32, 4, sha512.New384, false},
	0xC02F: {0xC02F, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", 16, 4, sha256.New, false},
	0xC030: {0xC030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", 32, 4, sha512.New384, false},
	0x009E: {0x009E, "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", 16, 4, sha256.New, false},
	0x009F: {0x009F, "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384", 32, 4, sha512.New384, false},
	0xCCA8: {0xCCA8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", 32, 12, sha256.New, true},
	0xCCA9: {0xCCA9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", 32, 12, sha256.New, true},
}

func (s *suite) aead(key []byte) (cipher.AEAD, error) {
	if s.chacha {
		return chacha20poly1305.New(key)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// expandLabel is TLS 1.3's HKDF-Expand-Label (RFC 8446, 7.1).
func (s *suite) expandLabel(secret []byte, label string, n int) ([]byte, error) {
	full := "tls13 " + label
	info := make([]byte, 0, 4+len(full))
	info = binary.BigEndian.AppendUint16(info, uint16(n))
	info = append(info, byte(len(full)))
	info = append(info, full...)
	info = append(info, 0) // empty context
	return hkdf.Expand(s.hash, secret, string(info), n)
}

// trafficKeys are a TLS 1.3 traffic secret's key and IV (RFC 8446, 7.3).
func (s *suite) trafficKeys(secret []byte) (key, iv []byte, err error) {
	if key, err = s.expandLabel(secret, "key", s.keyLen); err != nil {
		return nil, nil, err
	}
	iv, err = s.expandLabel(secret, "iv", 12)
	return key, iv, err
}

// nextSecret is a traffic secret after a KeyUpdate (RFC 8446, 7.2).
func (s *suite) nextSecret(secret []byte) ([]byte, error) {
	return s.expandLabel(secret, "traffic upd", len(secret))
}

// keyBlock derives TLS 1.2's client and server write keys and IVs from
// the master secret (RFC 5246, 6.3; AEAD suites have no MAC keys).
func (s *suite) keyBlock(master, clientRandom, serverRandom []byte) (clientKey, serverKey, clientIV, serverIV []byte) {
	seed := make([]byte, 0, 64)
	seed = append(append(seed, serverRandom...), clientRandom...)
	b := prf12(s.hash, master, "key expansion", seed, 2*s.keyLen+2*s.ivLen)
	clientKey, b = b[:s.keyLen], b[s.keyLen:]
	serverKey, b = b[:s.keyLen], b[s.keyLen:]
	clientIV, b = b[:s.ivLen], b[s.ivLen:]
	serverIV = b[:s.ivLen]
	return clientKey, serverKey, clientIV, serverIV
}

// prf12 is TLS 1.2's PRF, P_hash over HMAC (RFC 5246, 5): the standard
// library has HMAC but not this composition of it.
func prf12(h func() hash.Hash, secret []byte, label string, seed []byte, n int) []byte {
	labelSeed := append([]byte(label), seed...)
	mac := hmac.New(h, secret)
	out := make([]byte, 0, n+mac.Size())
	mac.Write(labelSeed)
	a := mac.Sum(nil) // A(1)
	for len(out) < n {
		mac.Reset()
		mac.Write(a)
		mac.Write(labelSeed)
		out = mac.Sum(out)
		mac.Reset()
		mac.Write(a)
		a = mac.Sum(a[:0])
	}
	return out[:n]
}
