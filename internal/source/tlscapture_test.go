package source

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/kscope-dev/kscope/internal/capture"
)

// tlsWrite is one write of a TLS connection, in the order written.
type tlsWrite struct {
	fromClient bool
	data       []byte
}

// tapConn logs what is written to it.
type tapConn struct {
	net.Conn
	fromClient bool
	mu         *sync.Mutex
	log        *[]tlsWrite
}

func (c tapConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	*c.log = append(*c.log, tlsWrite{c.fromClient, bytes.Clone(b)})
	c.mu.Unlock()
	return c.Conn.Write(b)
}

// apiVersionsFrame is an ApiVersions v0 request frame.
func apiVersionsFrame(corr int32) []byte {
	body := binary.BigEndian.AppendUint16(nil, 18) // api key
	body = binary.BigEndian.AppendUint16(body, 0)  // version
	body = binary.BigEndian.AppendUint32(body, uint32(corr))
	body = binary.BigEndian.AppendUint16(body, 4)
	body = append(body, "test"...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// apiVersionsResponse is its response: no error, no versions.
func apiVersionsResponse(corr int32) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(corr))
	body = binary.BigEndian.AppendUint16(body, 0)
	body = binary.BigEndian.AppendUint32(body, 0)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// kafkaOverTLS runs n ApiVersions exchanges between Go's TLS client and
// server over a pipe and returns the TLS bytes written both ways and the
// client's key log.
func kafkaOverTLS(t *testing.T, version uint16, n int) ([]tlsWrite, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log []tlsWrite
	var keyLog bytes.Buffer
	cp, sp := net.Pipe()
	server := tls.Server(tapConn{sp, false, &mu, &log}, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
	client := tls.Client(tapConn{cp, true, &mu, &log}, &tls.Config{InsecureSkipVerify: true, MinVersion: version, MaxVersion: version, KeyLogWriter: &keyLog})
	done := make(chan error, 1)
	go func() { done <- serveFrames(server, n) }()
	for i := range n {
		if _, err := client.Write(apiVersionsFrame(int32(i + 1))); err != nil {
			t.Fatal(err)
		}
		if err := skipFrame(client); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cp.Close()
	sp.Close()
	return log, keyLog.Bytes()
}

// serveFrames answers n request frames.
func serveFrames(server io.ReadWriter, n int) error {
	for i := range n {
		if err := skipFrame(server); err != nil {
			return err
		}
		if _, err := server.Write(apiVersionsResponse(int32(i + 1))); err != nil {
			return err
		}
	}
	return nil
}

// skipFrame reads one size-prefixed frame.
func skipFrame(r io.Reader) error {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return err
	}
	_, err := io.CopyN(io.Discard, r, int64(binary.BigEndian.Uint32(size[:])))
	return err
}

// tcpFlow turns a TLS conversation into captured TCP packets (raw IPv4)
// between 127.0.0.2:cport and the broker 127.0.0.1:9092.
type tcpFlow struct {
	cport      uint16
	cseq, bseq uint32
	now        time.Time
	packets    []capturedPacket
}

type capturedPacket struct {
	ci   gopacket.CaptureInfo
	data []byte
}

func newTCPFlow(cport uint16, start time.Time) *tcpFlow {
	f := &tcpFlow{cport: cport, cseq: 1000, bseq: 5000, now: start}
	f.add(true, nil, true)
	f.add(false, nil, true)
	return f
}

func (f *tcpFlow) add(fromClient bool, payload []byte, syn bool) {
	tcp := &layers.TCP{SYN: syn, ACK: !syn || !fromClient, Window: 65535}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP}
	client, broker := net.IPv4(127, 0, 0, 2).To4(), net.IPv4(127, 0, 0, 1).To4()
	if fromClient {
		tcp.SrcPort, tcp.DstPort, tcp.Seq = layers.TCPPort(f.cport), 9092, f.cseq
		ip.SrcIP, ip.DstIP = client, broker
		f.cseq += uint32(len(payload))
		if syn {
			f.cseq++
		}
	} else {
		tcp.SrcPort, tcp.DstPort, tcp.Seq = 9092, layers.TCPPort(f.cport), f.bseq
		ip.SrcIP, ip.DstIP = broker, client
		f.bseq += uint32(len(payload))
		if syn {
			f.bseq++
		}
	}
	tcp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ip, tcp, gopacket.Payload(payload)); err != nil {
		panic(err)
	}
	data := bytes.Clone(buf.Bytes())
	f.packets = append(f.packets, capturedPacket{gopacket.CaptureInfo{Timestamp: f.now, CaptureLength: len(data), Length: len(data)}, data})
	f.now = f.now.Add(100 * time.Microsecond)
}

// send adds a write as segments of at most 1448 bytes.
func (f *tcpFlow) send(w tlsWrite) {
	for p := w.data; len(p) > 0; {
		n := min(len(p), 1448)
		f.add(w.fromClient, p[:n], false)
		p = p[n:]
	}
}

// tlsConn is one captured TLS connection: its writes and the key log of
// its session.
type tlsConn struct {
	writes []tlsWrite
	keyLog []byte
}

func newTLSConn(t *testing.T, version uint16) tlsConn {
	writes, keyLog := kafkaOverTLS(t, version, 3)
	return tlsConn{writes, keyLog}
}

// damaged is the connection with a record that cannot decrypt after its
// conversation: it decrypts, then stops.
func (c tlsConn) damaged() tlsConn {
	bogus := append([]byte{23, 3, 3, 0, 32}, bytes.Repeat([]byte{0x5a}, 32)...)
	c.writes = append(append([]tlsWrite(nil), c.writes...), tlsWrite{fromClient: true, data: bogus})
	return c
}

// capturePart is a piece of a test capture: connections one after the
// other, or a secrets block.
type capturePart struct {
	conns   []tlsConn
	secrets []byte
}

// writeTLSCapture writes the parts as a pcapng (raw IP) file.
func writeTLSCapture(t *testing.T, parts ...capturePart) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := capture.NewPcapNGWriter(&buf, layers.LinkTypeRaw, 0)
	if err != nil {
		t.Fatal(err)
	}
	start, port := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), uint16(40000)
	for _, p := range parts {
		for _, c := range p.conns {
			f := newTCPFlow(port, start)
			for _, wr := range c.writes {
				f.send(wr)
			}
			for _, pkt := range f.packets {
				if err := w.WritePacket(pkt.ci, pkt.data); err != nil {
					t.Fatal(err)
				}
			}
			port++
			start = f.now.Add(time.Millisecond)
		}
		if p.secrets != nil {
			if err := w.WriteSecrets(p.secrets); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tls.pcapng")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// wrongSecrets is a key log with c's client random and other secrets.
func wrongSecrets(t *testing.T, c tlsConn) []byte {
	t.Helper()
	var out bytes.Buffer
	for line := range strings.SplitSeq(strings.TrimSpace(string(c.keyLog)), "\n") {
		f := strings.Fields(line)
		out.WriteString(f[0] + " " + f[1] + " " + strings.Repeat("5a", len(f[2])/2) + "\n")
	}
	return out.Bytes()
}

func writeKeyLog(t *testing.T, logs ...[]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys.log")
	if err := os.WriteFile(path, bytes.Join(logs, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
