package auth_test

import (
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

func TestSessions(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)
	s, err := auth.NewSessions("a-secret-of-16+chars", time.Hour)
	require.NoError(t, err)
	v1, err := s.Issue("alice", now)
	require.NoError(t, err)
	v2, err := s.Issue("alice", now)
	require.NoError(t, err)
	require.NotEqual(t, v1, v2, "each login gets a fresh session value")

	name, err := s.Verify(v1, now.Add(59*time.Minute))
	require.NoError(t, err)
	require.Equal(t, "alice", name)
	_, err = s.Verify(v1, now.Add(time.Hour))
	require.ErrorIs(t, err, auth.ErrSession, "expired")
	_, err = s.Verify(v1[:len(v1)-2]+"xx", now)
	require.ErrorIs(t, err, auth.ErrSession, "forged signature")
	other, _ := auth.NewSessions("another-secret-16chars", time.Hour)
	_, err = other.Verify(v1, now)
	require.ErrorIs(t, err, auth.ErrSession, "signed with another key")
	_, err = auth.NewSessions("short", time.Hour)
	require.Error(t, err)
}
