package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Sessions signs and checks console session cookies. A cookie holds the
// principal's name, an expiry and a random nonce, signed with HMAC-SHA256:
// no server-side store, and a fresh nonce per login.
type Sessions struct {
	key []byte
	TTL time.Duration
}

// NewSessions uses secret as the signing key; an empty secret draws a random
// one (sessions then end when the process restarts).
func NewSessions(secret string, ttl time.Duration) (*Sessions, error) {
	key := []byte(secret)
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("generate session key: %w", err)
		}
	} else if len(key) < 16 {
		return nil, fmt.Errorf("session secret must be at least 16 characters")
	}
	if ttl <= 0 {
		ttl = 12 * time.Hour
	}
	return &Sessions{key: key, TTL: ttl}, nil
}

// Issue returns a cookie value for name, valid until now+TTL.
func (s *Sessions) Issue(name string, now time.Time) (string, error) {
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("generate session nonce: %w", err)
	}
	payload := strings.Join([]string{
		base64.RawURLEncoding.EncodeToString([]byte(name)),
		strconv.FormatInt(now.Add(s.TTL).Unix(), 10),
		base64.RawURLEncoding.EncodeToString(nonce),
	}, ".")
	return payload + "." + s.sign(payload), nil
}

// Verify returns the principal name in a valid, unexpired cookie value.
func (s *Sessions) Verify(value string, now time.Time) (string, error) {
	i := strings.LastIndexByte(value, '.')
	if i < 0 {
		return "", ErrSession
	}
	payload, sig := value[:i], value[i+1:]
	if !hmac.Equal([]byte(sig), []byte(s.sign(payload))) {
		return "", ErrSession
	}
	parts := strings.Split(payload, ".")
	if len(parts) != 3 {
		return "", ErrSession
	}
	expires, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !now.Before(time.Unix(expires, 0)) {
		return "", ErrSession
	}
	name, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return "", ErrSession
	}
	return string(name), nil
}

func (s *Sessions) sign(payload string) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}
