package httpguard

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/needle-dev/needle/product/internal/atomicfile"
)

// TokenBytes is the entropy of a token, a login code and a session id.
const TokenBytes = 32

// NewSecret returns TokenBytes random bytes as lower-case hex.
func NewSecret() string {
	b := make([]byte, TokenBytes)
	rand.Read(b) // never fails (crypto/rand panics rather)
	return hex.EncodeToString(b)
}

// validSecret reports whether s has the shape NewSecret gives.
func validSecret(s string) bool {
	if len(s) != 2*TokenBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// LoadOrCreateToken returns the token kept in the file at path, creating it
// (0600, written atomically) when there is none. A token file that others
// may read (group or world permission bits), that is not a regular file, or
// that does not hold exactly one token is an error, never silently
// replaced: the caller decides. Two processes must not create the same file
// at once; the caller holds the profile lock.
func LoadOrCreateToken(path string) (string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		tok := NewSecret()
		if err := atomicfile.Write(path, []byte(tok+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("create token %s: %w", path, err)
		}
		return tok, nil
	}
	if err != nil {
		return "", fmt.Errorf("token %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("token %s: not a regular file (%v)", path, fi.Mode().Type())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("token %s: mode %#o lets others read it; want 0600 (remove the file to make a new token)", path, perm)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token %s: %w", path, err)
	}
	tok := strings.TrimSuffix(string(data), "\n")
	if !validSecret(tok) {
		return "", fmt.Errorf("token %s: not a token (want %d lower-case hex digits; remove the file to make a new one)", path, 2*TokenBytes)
	}
	return tok, nil
}
