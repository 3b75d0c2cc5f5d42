// Package auth decides who may do what: principals configured with hashed
// bearer tokens, their roles and the namespaces they are bound to, and the
// signed session cookies the console uses after a token login.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Roles, from least to most powerful; worker stands apart and may only use
// the worker protocol.
const (
	RoleViewer   = "viewer"
	RoleOperator = "operator"
	RoleAdmin    = "admin"
	RoleWorker   = "worker"
)

// Permission is what a route needs.
type Permission int

// Permissions, matching CONTRACT §9's roles.
const (
	Read    Permission = iota // see schedules, runs, history
	Operate                   // pause, resume, trigger, backfill, cancel/terminate runs
	Admin                     // create, update, delete schedules; tick
	Work                      // the worker protocol
)

func (p Permission) String() string {
	return [...]string{"read", "operate", "admin", "work"}[p]
}

// Needs says, in plain words, which role grants p and what it covers.
func (p Permission) Needs() string {
	return [...]string{
		"any role can read it",
		"this needs the operator or admin role (pause, resume, trigger, backfill, cancel runs)",
		"this needs the admin role (create, edit, delete, notifiers, tick)",
		"this needs the worker role (the worker protocol)",
	}[p]
}

// Principal is an authenticated caller.
type Principal struct {
	Name       string   `yaml:"name" json:"name"`
	Role       string   `yaml:"role" json:"role"`
	Namespaces []string `yaml:"namespaces" json:"namespaces"` // empty or ["*"]: every namespace
	TokenHash  string   `yaml:"token_sha256" json:"token_sha256"`
}

// Can reports whether the principal's role grants perm.
func (p *Principal) Can(perm Permission) bool {
	switch p.Role {
	case RoleAdmin:
		return true // admins may also act as workers
	case RoleOperator:
		return perm == Read || perm == Operate
	case RoleViewer:
		return perm == Read
	case RoleWorker:
		return perm == Work
	}
	return false
}

// Allows reports whether the principal may see namespace ns.
func (p *Principal) Allows(ns string) bool {
	return len(p.Namespaces) == 0 || slices.Contains(p.Namespaces, "*") || slices.Contains(p.Namespaces, ns)
}

// AllNamespaces reports whether the principal is bound to no namespace.
func (p *Principal) AllNamespaces() bool {
	return len(p.Namespaces) == 0 || slices.Contains(p.Namespaces, "*")
}

// Local is the principal of local mode (no tokens configured, loopback only).
var Local = &Principal{Name: "local", Role: RoleAdmin}

// Store holds the configured principals.
type Store struct {
	principals []*Principal
}

// Enabled reports whether any token is configured; without one the server
// runs in local mode.
func (s *Store) Enabled() bool { return s != nil && len(s.principals) > 0 }

// Authenticate finds the principal whose token hash matches token. Every
// hash is compared in constant time, so timing tells nothing about which.
func (s *Store) Authenticate(token string) (*Principal, bool) {
	if s == nil || token == "" {
		return nil, false
	}
	sum := sha256.Sum256([]byte(token))
	got := []byte(hex.EncodeToString(sum[:]))
	var found *Principal
	for _, p := range s.principals {
		if subtle.ConstantTimeCompare(got, []byte(p.TokenHash)) == 1 {
			found = p
		}
	}
	return found, found != nil
}

// Lookup returns the principal by name (sessions store names, so removing
// a principal from the file ends its sessions).
func (s *Store) Lookup(name string) (*Principal, bool) {
	if s == nil {
		return nil, false
	}
	for _, p := range s.principals {
		if p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// Parse reads principals from YAML or JSON (JSON is YAML): either a list or
// {principals: [...]}. Tokens appear only as SHA-256 hex hashes.
func Parse(data []byte) (*Store, error) {
	var doc struct {
		Principals []*Principal `yaml:"principals"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil || doc.Principals == nil {
		var list []*Principal
		if err2 := yaml.Unmarshal(data, &list); err2 != nil {
			if err == nil {
				err = err2
			}
			return nil, fmt.Errorf("parse tokens: %w", err)
		}
		doc.Principals = list
	}
	names := map[string]bool{}
	for i, p := range doc.Principals {
		p.TokenHash = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(p.TokenHash)), "sha256:")
		switch {
		case p.Name == "":
			return nil, fmt.Errorf("parse tokens: entry %d has no name", i+1)
		case names[p.Name]:
			return nil, fmt.Errorf("parse tokens: name %q appears twice", p.Name)
		case !slices.Contains([]string{RoleViewer, RoleOperator, RoleAdmin, RoleWorker}, p.Role):
			return nil, fmt.Errorf("parse tokens: %s: role must be viewer, operator, admin or worker", p.Name)
		case len(p.TokenHash) != 64 || !isHex(p.TokenHash):
			return nil, fmt.Errorf("parse tokens: %s: token_sha256 must be 64 hex digits (run 'tideline token create')", p.Name)
		}
		names[p.Name] = true
	}
	return &Store{principals: doc.Principals}, nil
}

// Load reads the tokens file named by path, or the inline document; both
// empty gives an empty store (local mode).
func Load(path, inline string) (*Store, error) {
	switch {
	case path != "":
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read tokens file: %w", err)
		}
		return Parse(data)
	case strings.TrimSpace(inline) != "":
		return Parse([]byte(inline))
	}
	return &Store{}, nil
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// NewToken returns a fresh random token and its stored hash.
func NewToken() (token, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("generate token: %w", err)
	}
	token = "tl_" + base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(token))
	return token, hex.EncodeToString(sum[:]), nil
}

// ErrSession is any problem with a session cookie: missing, forged, expired.
var ErrSession = errors.New("invalid session")

// AddEphemeral adds a principal with a fresh token that lives only in this
// process (the demo's in-process worker) and returns the token.
func (s *Store) AddEphemeral(name, role string) (string, error) {
	token, hash, err := NewToken()
	if err != nil {
		return "", err
	}
	s.principals = append(s.principals, &Principal{Name: name, Role: role, TokenHash: hash})
	return token, nil
}
