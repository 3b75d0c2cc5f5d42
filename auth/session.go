package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Sessions issues and checks console sessions. The cookie holds a random ID
// signed with HMAC-SHA256 (a forged cookie is refused without a database
// read); the session itself is a row in a SessionStore shared by every
// replica, which is what makes it revocable:
//   - logout deletes the row, so a replayed cookie is worthless everywhere;
//   - the row records the hash of the token the user signed in with, and a
//     session whose principal no longer has that hash (token rotated or
//     removed from the tokens file) is refused.
type Sessions struct {
	key   []byte
	TTL   time.Duration
	store SessionStore
}

// SessionRecord is one stored session. IDHash is the SHA-256 of the
// cookie's ID, so the table never holds a usable cookie.
type SessionRecord struct {
	IDHash    string
	Principal string
	TokenHash string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// SessionStore keeps sessions where every replica sees them (the database).
type SessionStore interface {
	InsertSession(ctx context.Context, rec SessionRecord) error
	// GetSession reports found=false for an unknown ID.
	GetSession(ctx context.Context, idHash string) (rec SessionRecord, found bool, err error)
	DeleteSession(ctx context.Context, idHash string) error
	DeleteExpiredSessions(ctx context.Context, now time.Time) error
}

// Session is a signed-in console user.
type Session struct {
	// ID is the secret random ID from the cookie; the CSRF token is bound
	// to it.
	ID        string
	Principal *Principal
}

// NewSessions uses secret as the signing key; an empty secret draws a random
// one (cookies from other processes are then refused). Bind a store with
// WithStore before use.
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

// WithStore returns sessions that keep their state in store.
func (s *Sessions) WithStore(store SessionStore) *Sessions {
	c := *s
	c.store = store
	return &c
}

// HasStore reports whether a store is bound.
func (s *Sessions) HasStore() bool { return s.store != nil }

// Start records a new session for p, valid until now+TTL, and returns the
// cookie value. Every login gets a fresh ID: a cookie planted before
// sign-in is worthless afterwards (no session fixation).
func (s *Sessions) Start(ctx context.Context, p *Principal, now time.Time) (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generate session ID: %w", err)
	}
	id := base64.RawURLEncoding.EncodeToString(raw)
	// Sweeping here keeps the table at the live sessions without a job.
	if err := s.store.DeleteExpiredSessions(ctx, now); err != nil {
		return "", err
	}
	if err := s.store.InsertSession(ctx, SessionRecord{
		IDHash: hashID(id), Principal: p.Name, TokenHash: p.TokenHash, CreatedAt: now, ExpiresAt: now.Add(s.TTL),
	}); err != nil {
		return "", err
	}
	return id + "." + s.mac("session", id), nil
}

// Resolve returns the live session of a cookie value: signed by us, stored,
// unexpired, and its principal still holds the token it signed in with.
// Any failure of the cookie itself is ErrSession; store failures are other
// errors.
func (s *Sessions) Resolve(ctx context.Context, value string, principals *Store, now time.Time) (*Session, error) {
	id, ok := s.verify(value)
	if !ok {
		return nil, ErrSession
	}
	rec, found, err := s.store.GetSession(ctx, hashID(id))
	if err != nil {
		return nil, err
	}
	if !found || !now.Before(rec.ExpiresAt) {
		return nil, ErrSession
	}
	p, ok := principals.Lookup(rec.Principal)
	if !ok || subtle.ConstantTimeCompare([]byte(p.TokenHash), []byte(rec.TokenHash)) != 1 {
		return nil, ErrSession // removed, or its token rotated
	}
	return &Session{ID: id, Principal: p}, nil
}

// End deletes the session of a cookie value, on every replica at once.
func (s *Sessions) End(ctx context.Context, value string) error {
	id, ok := s.verify(value)
	if !ok {
		return nil
	}
	return s.store.DeleteSession(ctx, hashID(id))
}

// CSRFToken is the anti-forgery token of binding (a session ID, or another
// secret the caller holds). It is derived, not stored: a cookie an attacker
// plants on a sibling domain cannot produce it.
func (s *Sessions) CSRFToken(binding string) string {
	return s.mac("csrf", binding)
}

func (s *Sessions) verify(value string) (string, bool) {
	id, sig, ok := strings.Cut(value, ".")
	if !ok || id == "" || !hmac.Equal([]byte(sig), []byte(s.mac("session", id))) {
		return "", false
	}
	return id, true
}

// mac signs value for one purpose; the purposes never collide, so a session
// signature is not a CSRF token and vice versa.
func (s *Sessions) mac(purpose, value string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(purpose + "\x00" + value))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func hashID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}
