package auth_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/auth"
)

func hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func TestParseAuthenticateAndRoles(t *testing.T) {
	t.Parallel()
	yamlDoc := `
principals:
  - name: alice
    role: admin
    token_sha256: sha256:` + hash("alice-token") + `
  - name: bob
    role: viewer
    namespaces: [team-a]
    token_sha256: ` + hash("bob-token") + `
`
	store, err := auth.Parse([]byte(yamlDoc))
	require.NoError(t, err)
	require.True(t, store.Enabled())

	alice, ok := store.Authenticate("alice-token")
	require.True(t, ok)
	require.Equal(t, "alice", alice.Name)
	require.True(t, alice.AllNamespaces())
	_, ok = store.Authenticate("alice-tokeN")
	require.False(t, ok)
	_, ok = store.Authenticate("")
	require.False(t, ok)

	bob, ok := store.Authenticate("bob-token")
	require.True(t, ok)
	require.True(t, bob.Allows("team-a"))
	require.False(t, bob.Allows("team-b"))

	// JSON is accepted too, as a bare list.
	jsonStore, err := auth.Parse([]byte(`[{"name":"w","role":"worker","token_sha256":"` + hash("w") + `"}]`))
	require.NoError(t, err)
	w, ok := jsonStore.Authenticate("w")
	require.True(t, ok)
	require.Equal(t, "worker", w.Role)

	matrix := map[string][]bool{ // read, operate, admin, work
		auth.RoleViewer:   {true, false, false, false},
		auth.RoleOperator: {true, true, false, false},
		auth.RoleAdmin:    {true, true, true, true},
		auth.RoleWorker:   {false, false, false, true},
	}
	for role, want := range matrix {
		p := &auth.Principal{Role: role}
		for i, perm := range []auth.Permission{auth.Read, auth.Operate, auth.Admin, auth.Work} {
			require.Equal(t, want[i], p.Can(perm), "%s %s", role, perm)
		}
	}
}

func TestParseRejectsBadDocuments(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"plain token":    `[{"name":"a","role":"admin","token_sha256":"secret"}]`,
		"unknown role":   `[{"name":"a","role":"root","token_sha256":"` + hash("x") + `"}]`,
		"no name":        `[{"role":"admin","token_sha256":"` + hash("x") + `"}]`,
		"duplicate name": `[{"name":"a","role":"admin","token_sha256":"` + hash("x") + `"},{"name":"a","role":"viewer","token_sha256":"` + hash("y") + `"}]`,
		"not yaml":       `: : :`,
	} {
		_, err := auth.Parse([]byte(doc))
		require.Error(t, err, name)
	}
}

func TestNewTokenIsRandomAndHashed(t *testing.T) {
	t.Parallel()
	a, ha, err := auth.NewToken()
	require.NoError(t, err)
	b, _, err := auth.NewToken()
	require.NoError(t, err)
	require.NotEqual(t, a, b)
	require.Equal(t, hash(a), ha)
	require.GreaterOrEqual(t, len(a), 40)
}

// memSessions is an in-memory SessionStore for the logic tests here; the
// database store is tested through the server on both dialects (web/).
type memSessions map[string]auth.SessionRecord

func (m memSessions) InsertSession(_ context.Context, rec auth.SessionRecord) error {
	m[rec.IDHash] = rec
	return nil
}

func (m memSessions) GetSession(_ context.Context, idHash string) (auth.SessionRecord, bool, error) {
	rec, ok := m[idHash]
	return rec, ok, nil
}

func (m memSessions) DeleteSession(_ context.Context, idHash string) error {
	delete(m, idHash)
	return nil
}

func (m memSessions) DeleteExpiredSessions(_ context.Context, now time.Time) error {
	for k, rec := range m {
		if !now.Before(rec.ExpiresAt) {
			delete(m, k)
		}
	}
	return nil
}

func TestSessions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)
	_, aliceHash, err := auth.NewToken()
	require.NoError(t, err)
	store, err := auth.Parse([]byte("principals: [{name: alice, role: admin, token_sha256: " + aliceHash + "}]"))
	require.NoError(t, err)
	alice, _ := store.Lookup("alice")
	mem := memSessions{}
	base, err := auth.NewSessions("a-secret-of-16+chars", time.Hour)
	require.NoError(t, err)
	s := base.WithStore(mem)
	v1, err := s.Start(ctx, alice, now)
	require.NoError(t, err)
	v2, err := s.Start(ctx, alice, now)
	require.NoError(t, err)
	require.NotEqual(t, v1, v2, "each login gets a fresh session value")

	got, err := s.Resolve(ctx, v1, store, now.Add(59*time.Minute))
	require.NoError(t, err)
	require.Equal(t, "alice", got.Principal.Name)
	_, err = s.Resolve(ctx, v1, store, now.Add(time.Hour))
	require.ErrorIs(t, err, auth.ErrSession, "expired")
	_, err = s.Resolve(ctx, v1[:len(v1)-2]+"xx", store, now)
	require.ErrorIs(t, err, auth.ErrSession, "forged signature")
	other, _ := auth.NewSessions("another-secret-16chars", time.Hour)
	_, err = other.WithStore(mem).Resolve(ctx, v1, store, now)
	require.ErrorIs(t, err, auth.ErrSession, "signed with another key")
	_, err = auth.NewSessions("short", time.Hour)
	require.Error(t, err)

	// Logout ends the session in the store: the same cookie is dead.
	require.NoError(t, s.End(ctx, v1))
	_, err = s.Resolve(ctx, v1, store, now)
	require.ErrorIs(t, err, auth.ErrSession, "ended by logout")
	_, err = s.Resolve(ctx, v2, store, now)
	require.NoError(t, err, "other sessions live on")

	// A rotated token ends the sessions made with the old one.
	_, newHash, err := auth.NewToken()
	require.NoError(t, err)
	rotated, err := auth.Parse([]byte("principals: [{name: alice, role: admin, token_sha256: " + newHash + "}]"))
	require.NoError(t, err)
	_, err = s.Resolve(ctx, v2, rotated, now)
	require.ErrorIs(t, err, auth.ErrSession, "token rotated")
	removed, err := auth.Parse([]byte("principals: [{name: bob, role: admin, token_sha256: " + aliceHash + "}]"))
	require.NoError(t, err)
	_, err = s.Resolve(ctx, v2, removed, now)
	require.ErrorIs(t, err, auth.ErrSession, "principal removed (even if another now has the hash)")

	// CSRF tokens differ per binding and are not session signatures.
	require.NotEqual(t, s.CSRFToken("a"), s.CSRFToken("b"))
	require.Equal(t, s.CSRFToken("a"), base.CSRFToken("a"), "derived from the key, not stored")
	require.NotEqual(t, s.CSRFToken("a"), other.CSRFToken("a"))
}
