package protodef

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/kscope-dev/kscope/internal/safefile"
)

// Bounds on what a jar may make us read. A kafka-clients jar is about
// 10 MB, its largest request definition under 16 KB, and it has fewer than
// 100 of them: the limits leave room for growth and none for a bomb.
const (
	maxJarBytes     = 64 << 20
	maxMessageBytes = 1 << 20
	maxMessages     = 1024
	maxVersionBytes = 4 << 10
	messageDir      = "common/message"
	versionFile     = "kafka/kafka-version.properties"
	requestSuffix   = "Request.json"
)

// Jar is what one kafka-clients jar says about the protocol.
type Jar struct {
	// Version is the version the jar declares in
	// kafka/kafka-version.properties ("4.0.2").
	Version string
	// SHA256 is the hex sha256 of the jar file.
	SHA256 string
	// APIs are the request definitions, by key.
	APIs []API
}

// ReadJar reads the kafka-clients jar at path (a regular file of at most
// 64 MiB).
func ReadJar(path string) (Jar, error) {
	data, err := safefile.ReadRegular(path, maxJarBytes)
	if err != nil {
		return Jar{}, fmt.Errorf("kafka-clients jar: %w", err)
	}
	jar, err := ParseJar(data)
	if err != nil {
		return Jar{}, fmt.Errorf("%s: %w", path, err)
	}
	return jar, nil
}

// ParseJar reads a kafka-clients jar held in memory.
func ParseJar(data []byte) (Jar, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return Jar{}, fmt.Errorf("not a jar: %w", err)
	}
	sum := sha256.Sum256(data)
	jar := Jar{SHA256: hex.EncodeToString(sum[:])}
	if jar.Version, err = jarVersion(zr); err != nil {
		return Jar{}, err
	}
	if jar.APIs, err = requestDefinitions(zr); err != nil {
		return Jar{}, err
	}
	return jar, nil
}

// jarVersion reads version= from kafka/kafka-version.properties, which
// Kafka's build writes into the jar (AppInfoParser reads it at run time).
func jarVersion(zr *zip.Reader) (string, error) {
	f, err := zr.Open(versionFile)
	if err != nil {
		return "", fmt.Errorf("%s: %w", versionFile, err)
	}
	defer f.Close()
	text, err := readBounded(f, maxVersionBytes)
	if err != nil {
		return "", fmt.Errorf("%s: %w", versionFile, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "version="); ok && v != "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s: no version= line", versionFile)
}

// requestDefinitions reads every common/message/*Request.json, sorted by
// API key; two definitions of one key are an error.
func requestDefinitions(zr *zip.Reader) ([]API, error) {
	var apis []API
	seen := map[int16]string{}
	files := 0
	for _, f := range zr.File {
		if !isRequestDefinition(f.Name) {
			continue
		}
		if files++; files > maxMessages {
			return nil, fmt.Errorf("more than %d request definitions under %s", maxMessages, messageDir)
		}
		api, isRequest, err := readDefinition(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		if !isRequest {
			continue
		}
		if other, dup := seen[api.Key]; dup {
			return nil, fmt.Errorf("%s: apiKey %d is also defined by %s", f.Name, api.Key, other)
		}
		seen[api.Key] = f.Name
		apis = append(apis, api)
	}
	if len(apis) == 0 {
		return nil, fmt.Errorf("no request definitions (%s/*%s)", messageDir, requestSuffix)
	}
	slices.SortFunc(apis, func(a, b API) int { return int(a.Key) - int(b.Key) })
	return apis, nil
}

func isRequestDefinition(name string) bool {
	dir, base := path.Split(name)
	return dir == messageDir+"/" && strings.HasSuffix(base, requestSuffix)
}

func readDefinition(f *zip.File) (API, bool, error) {
	rc, err := f.Open()
	if err != nil {
		return API{}, false, err
	}
	defer rc.Close()
	data, err := readBounded(rc, maxMessageBytes)
	if err != nil {
		return API{}, false, err
	}
	return ParseMessage(data)
}

// errTooLarge is wrapped by readBounded's error.
var errTooLarge = errors.New("larger than the limit")

// readBounded reads r whole, refusing more than limit bytes whatever the
// zip header claims the size is.
func readBounded(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w of %d bytes", errTooLarge, limit)
	}
	return data, nil
}
