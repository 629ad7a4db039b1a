package capture

// MaxSecretsBytes is the budget for the TLS key logs kept from the
// Decryption Secrets Blocks of a capture (all its files, when the caller
// shares it with File.LimitSecrets): about 90 000 TLS 1.2 or 18 000 TLS
// 1.3 sessions. A block that does not fit in what is left is skipped
// unread, and counted.
const MaxSecretsBytes = 16 << 20

// SecretsStats counts the Decryption Secrets Blocks of a capture file.
type SecretsStats struct {
	Blocks       int64 `json:"blocks"`        // TLS key log blocks kept
	Bytes        int64 `json:"bytes"`         // key log bytes kept
	Skipped      int64 `json:"skipped"`       // blocks skipped: over the budget
	SkippedBytes int64 `json:"skipped_bytes"` // their bytes
	// FirstSkipped is the byte offset of the first block skipped.
	FirstSkipped int64 `json:"first_skipped,omitempty"`
}

// secretsKeeper keeps the key logs of secrets blocks until File.Secrets
// takes them, within a budget.
type secretsKeeper struct {
	limit int64  // key log bytes that may still be kept
	kept  []byte // since File.Secrets last took them
	stats SecretsStats
}

// fits says whether a key log of n bytes may be kept.
func (s *secretsKeeper) fits(n int64) bool { return n <= s.limit }

func (s *secretsKeeper) keep(keyLog []byte) {
	s.kept = append(s.kept, keyLog...)
	n := int64(len(keyLog))
	if len(keyLog) > 0 && keyLog[len(keyLog)-1] != '\n' {
		s.kept = append(s.kept, '\n')
		n++
	}
	s.limit -= n
	s.stats.Blocks++
	s.stats.Bytes += n
}

func (s *secretsKeeper) skip(b ngBlock) {
	if s.stats.Skipped == 0 {
		s.stats.FirstSkipped = b.start
	}
	s.stats.Skipped++
	s.stats.SkippedBytes += b.length
}

// take returns the key logs kept since the last call.
func (s *secretsKeeper) take() []byte {
	k := s.kept
	s.kept = nil
	return k
}
