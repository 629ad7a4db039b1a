package lab

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// newPassword returns 32 characters of URL-safe base64 from 24 random
// bytes: nothing a JAAS string, a properties file or `kafka-storage
// --add-scram` would need to quote.
func newPassword() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("lab: random password: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// writeSecret replaces path with data, mode 0600 whatever the file's mode
// was (a new file renamed over it).
func writeSecret(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("lab: write %s: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil { // a leftover tmp keeps its mode
		return fmt.Errorf("lab: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("lab: write %s: %w", path, err)
	}
	return nil
}

// readSecret reads a one-line password file.
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("lab: read secret: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("lab: read secret: %s is empty", path)
	}
	return s, nil
}

// passwordFile returns the password in path, making a new one (and the
// file, 0600) when path does not exist; made reports which.
func passwordFile(path string) (pw string, made bool, err error) {
	pw, err = readSecret(path)
	if err == nil {
		return pw, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", false, err
	}
	if pw, err = newPassword(); err != nil {
		return "", false, err
	}
	if err := writeSecret(path, []byte(pw+"\n")); err != nil {
		return "", false, err
	}
	return pw, true, nil
}

// readUsers reads dir/users.json.
func readUsers(dir string) (Users, error) {
	var u Users
	p := filepath.Join(dir, UsersFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return u, fmt.Errorf("lab: SASL users: %w", err)
	}
	if err := json.Unmarshal(b, &u); err != nil {
		return u, fmt.Errorf("lab: SASL users: parse %s: %w", p, err)
	}
	if u.Plain.Name == "" || u.Plain.Password == "" || u.SCRAM.Name == "" || u.SCRAM.Password == "" {
		return u, fmt.Errorf("lab: SASL users: %s lacks a name or password", p)
	}
	return u, nil
}

// ensureUsers returns the users in dir/users.json, making them (random
// passwords) when the file does not exist.
func ensureUsers(dir string) (Users, error) {
	u, err := readUsers(dir)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return u, err
	}
	u = Users{
		Plain: User{Name: defaultPlainUser, Mechanism: MechanismPlain},
		SCRAM: User{Name: defaultSCRAMUser, Mechanism: MechanismSCRAM},
	}
	for _, pw := range []*string{&u.Plain.Password, &u.SCRAM.Password} {
		if *pw, err = newPassword(); err != nil {
			return u, err
		}
	}
	b, err := json.MarshalIndent(u, "", "  ")
	if err != nil {
		return u, fmt.Errorf("lab: SASL users: %w", err)
	}
	return u, writeSecret(filepath.Join(dir, UsersFile), append(b, '\n'))
}

// redactFile replaces the password of every user in the file at path by
// "<redacted>", should a tool have printed one there.
func redactFile(path string, users []User) error {
	if len(users) == 0 {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("lab: redact %s: %w", path, err)
	}
	s := string(b)
	for _, u := range users {
		s = strings.ReplaceAll(s, u.Password, "<redacted>")
	}
	if s == string(b) {
		return nil
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		return fmt.Errorf("lab: redact %s: %w", path, err)
	}
	return nil
}
