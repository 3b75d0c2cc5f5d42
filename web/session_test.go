package web_test

import (
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
	"github.com/tidelinehq/tideline/web"
)

// replica is one server process on a shared database: its own sessions
// object (same secret, as the docs require) and its own tokens file.
func replica(t *testing.T, db *bun.DB, tokensDoc string, trustProxy bool) *apiFixture {
	t.Helper()
	store, err := auth.Parse([]byte(tokensDoc))
	require.NoError(t, err)
	sessions, err := auth.NewSessions("shared-secret-of-replicas", time.Hour)
	require.NoError(t, err)
	clock := schedtest.NewClock(t0)
	h := web.NewServer(web.Deps{DB: db, Service: schedtest.Service(db, clock), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Version: "test", Clock: clock, Auth: web.Auth{Store: store, Sessions: sessions, TrustProxy: trustProxy}})
	return &apiFixture{t: t, db: db, clock: clock, h: h}
}

func tokensDoc(t *testing.T, names ...string) (string, map[string]string) {
	t.Helper()
	tokens := map[string]string{}
	var doc strings.Builder
	doc.WriteString("principals:\n")
	for _, name := range names {
		token, hash, err := auth.NewToken()
		require.NoError(t, err)
		tokens[name] = token
		fmt.Fprintf(&doc, "  - {name: %s, role: operator, token_sha256: %s}\n", name, hash)
	}
	return doc.String(), tokens
}

func browser(t *testing.T, f *apiFixture) *consoleClient {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &consoleClient{t: t, api: f, jar: jar}
}

func (c *consoleClient) setCookie(name, value string) {
	c.jar.SetCookies(c.jarURL("/waterline/"), []*http.Cookie{{Name: name, Value: value, Path: "/"}})
}

// Logout ends a session on every replica, and rotating or removing the token
// a session was made with ends it too: sessions live in the shared database,
// bound to the token's hash.
func TestSessionsAreRevocable(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		doc, tokens := tokensDoc(t, "alice", "bob")
		a, b := replica(t, db, doc, false), replica(t, db, doc, false)
		c := browser(t, a)
		seeOther(t, c.post("/waterline/login", url.Values{"token": {tokens["alice"]}}))
		cookie := c.cookie("tideline_session")
		require.NotEmpty(t, cookie)

		onB := browser(t, b)
		onB.setCookie("tideline_session", cookie)
		require.Equal(t, http.StatusOK, onB.get("/waterline/schedules").Status, "a session works on every replica")

		// Logout on B; the copied cookie is dead on A and B.
		require.Equal(t, "/waterline/login", seeOther(t, onB.post("/waterline/logout", nil)))
		for name, f := range map[string]*apiFixture{"A": a, "B": b} {
			replay := browser(t, f)
			replay.setCookie("tideline_session", cookie)
			require.Equal(t, http.StatusSeeOther, replay.get("/waterline/schedules").Status, "replayed after logout on %s", name)
			require.Equal(t, http.StatusUnauthorized, replay.post("/waterline/schedules/bulk", url.Values{"action": {"pause"}}).Status)
		}

		// Rotation: bob signs in, then his token is replaced in the file a
		// restarted replica reads. Alice, whose entry is unchanged, stays in.
		bobC := browser(t, a)
		seeOther(t, bobC.post("/waterline/login", url.Values{"token": {tokens["bob"]}}))
		aliceC := browser(t, a)
		seeOther(t, aliceC.post("/waterline/login", url.Values{"token": {tokens["alice"]}}))
		rotatedDoc, _ := tokensDoc(t, "bob")
		var aliceLine string
		for _, line := range strings.Split(doc, "\n") {
			if strings.Contains(line, "name: alice") {
				aliceLine = line
			}
		}
		rotated := replica(t, db, rotatedDoc+aliceLine+"\n", false)
		for who, jar := range map[string]*consoleClient{"bob": bobC, "alice": aliceC} {
			again := browser(t, rotated)
			again.setCookie("tideline_session", jar.cookie("tideline_session"))
			want := http.StatusOK
			if who == "bob" {
				want = http.StatusSeeOther
			}
			require.Equal(t, want, again.get("/waterline/schedules").Status, who)
		}
		// Removal: a file without alice ends her session.
		removed := replica(t, db, rotatedDoc, false)
		gone := browser(t, removed)
		gone.setCookie("tideline_session", aliceC.cookie("tideline_session"))
		require.Equal(t, http.StatusSeeOther, gone.get("/waterline/schedules").Status)

		// The table holds hashes, never a usable cookie value.
		var ids []string
		require.NoError(t, db.NewSelect().Table("console_sessions").Column("id_hash").Scan(t.Context(), &ids))
		require.NotEmpty(t, ids)
		for _, id := range ids {
			require.NotContains(t, aliceC.cookie("tideline_session"), id)
			require.Len(t, id, 64)
		}
	})
}

// Cookie tossing: a _csrf cookie and form field of the attacker's choosing,
// or the CSRF token of the attacker's own session, do not pass for the
// victim's session.
func TestCSRFTokenIsBoundToTheSession(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		doc, tokens := tokensDoc(t, "victim", "attacker")
		f := replica(t, db, doc, false)
		admin := newSecured(t, db)
		admin.must(201, "POST", v2+"/schedules", `{"schedule_id":"c1","cron":"0 * * * *","action":{"workflow_type":"w"}}`, admin.as("admin")...)

		attacker := browser(t, f)
		seeOther(t, attacker.post("/waterline/login", url.Values{"token": {tokens["attacker"]}}))
		attacker.get("/waterline/schedules")
		attackersToken := attacker.csrf
		require.NotEmpty(t, attackersToken)

		victim := browser(t, f)
		seeOther(t, victim.post("/waterline/login", url.Values{"token": {tokens["victim"]}}))
		victim.noCSRF = true
		for name, forged := range map[string]struct{ cookie, field string }{
			"tossed cookie with a matching field": {"attacker-chosen-value-0123456789", "attacker-chosen-value-0123456789"},
			"the attacker's own session token":    {"", attackersToken},
		} {
			if forged.cookie != "" {
				victim.setCookie("_csrf", forged.cookie)
			}
			res := victim.post("/waterline/schedules/c1/pause", url.Values{"reason": {"forged"}, "_csrf": {forged.field}})
			require.Equal(t, http.StatusForbidden, res.Status, name)
		}
		require.Equal(t, "active", admin.must(200, "GET", v2+"/schedules/c1", "", admin.as("viewer")...)["status"], "nothing changed")

		// With the victim's own token, from a sibling site, still no.
		victim.noCSRF = false
		res := victim.post("/waterline/schedules/c1/pause", url.Values{"reason": {"forged"}}, "Sec-Fetch-Site", "same-site")
		require.Equal(t, http.StatusForbidden, res.Status, "same-site (a sibling subdomain) is where tossed cookies come from")
		seeOther(t, victim.post("/waterline/schedules/c1/pause", url.Values{"reason": {"real"}}, "Sec-Fetch-Site", "same-origin"))
		require.Equal(t, "paused", admin.must(200, "GET", v2+"/schedules/c1", "", admin.as("viewer")...)["status"])
	})
}

// Every console cookie is Secure when the session cookie is (TLS behind a
// trusted proxy here), and none is over plain HTTP, where Secure cookies
// would be dropped.
func TestConsoleCookiesAreSecureWithTheSession(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	doc, tokens := tokensDoc(t, "op")
	f := replica(t, db, doc, true)
	admin := newSecured(t, db)
	admin.must(201, "POST", v2+"/schedules", `{"schedule_id":"c1","cron":"0 * * * *","action":{"workflow_type":"w"}}`, admin.as("admin")...)
	for _, proto := range []string{"https", "http"} {
		c := browser(t, f)
		c.https = proto == "https"
		secure := map[string]bool{}
		record := func(p page) {
			for _, line := range p.Header.Values("Set-Cookie") {
				name, _, _ := strings.Cut(line, "=")
				secure[name] = strings.Contains(line, "; Secure")
				require.Contains(t, line, "HttpOnly", line)
				require.Contains(t, line, "SameSite=Lax", line)
			}
		}
		h := []string{"X-Forwarded-Proto", proto}
		record(c.get("/waterline/login", h...))
		record(c.post("/waterline/login", url.Values{"token": {tokens["op"]}}, h...))
		record(c.get("/waterline/namespace?namespace=default", h...))
		record(c.post("/waterline/schedules/c1/pause", url.Values{"reason": {"x"}}, h...))
		for _, name := range []string{"_csrf", "tideline_session", "tideline_ns", "tideline_flash"} {
			got, set := secure[name]
			require.True(t, set, "%s: %s was set", proto, name)
			require.Equal(t, proto == "https", got, "%s: %s Secure", proto, name)
		}
		admin.must(200, "POST", v2+"/schedules/c1/resume", "", admin.as("admin")...)
	}
}

// A bulk action over thousands of schedules sets a small flash cookie: a
// summary by reason with a few IDs, not the whole list.
func TestBulkFlashStaysSmall(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.api.must(201, "POST", v2+"/schedules", `{"schedule_id":"real","cron":"0 * * * *","action":{"workflow_type":"w"}}`)
		form := url.Values{"action": {"pause"}, "ids": {"real"}}
		for i := range 2000 {
			form.Add("ids", fmt.Sprintf("missing-%04d-%s", i, strings.Repeat("x", 150)))
		}
		p := c.post("/waterline/schedules/bulk", form)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Raw)
		var flash string
		for _, ck := range p.Header.Values("Set-Cookie") {
			if strings.HasPrefix(ck, "tideline_flash=") {
				flash = ck
			}
		}
		require.NotEmpty(t, flash)
		require.Less(t, len(flash), 2048, "the flash cookie stays far below the 4 KB browsers keep")
		value := strings.TrimPrefix(strings.SplitN(flash, ";", 2)[0], "tideline_flash=")
		body, err := base64.RawURLEncoding.DecodeString(value)
		require.NoError(t, err)
		require.Contains(t, string(body), "Paused 1 schedule.")
		require.Contains(t, string(body), "and 1997 more (not found)")
	})
}

// Behind --trust-proxy the client is the address the proxy appended last;
// rotating the X-Forwarded-For entries a client sends itself does not buy
// fresh attempts. Guessing at one token prefix from many addresses is
// limited too.
func TestLoginRateLimitKeys(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	doc, _ := tokensDoc(t, "op")
	proxied := browser(t, replica(t, db, doc, true))
	var statuses []int
	for i := range 7 {
		statuses = append(statuses, proxied.post("/waterline/login", url.Values{"token": {fmt.Sprintf("guess-%d-unique", i)}},
			"X-Forwarded-For", fmt.Sprintf("198.51.100.%d, 203.0.113.7", i)).Status)
	}
	require.Equal(t, []int{401, 401, 401, 401, 401, 429, 429}, statuses, "forged entries do not mint new keys")
	other := proxied.post("/waterline/login", url.Values{"token": {"guess-other"}}, "X-Forwarded-For", "203.0.113.8")
	require.Equal(t, http.StatusUnauthorized, other.Status, "another client (per the proxy) has its own budget")

	// A client that reaches the server directly — not from a trusted
	// proxy — is its own address, whatever X-Forwarded-For it sends
	// (issue 36: rotating the header escaped the limit).
	statuses = nil
	for i := range 7 {
		c := browser(t, proxied.api)
		c.remoteAddr = "203.0.113.50:4444"
		statuses = append(statuses, c.post("/waterline/login", url.Values{"token": {fmt.Sprintf("guess-%d-direct", i)}},
			"X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i)).Status)
	}
	require.Equal(t, []int{401, 401, 401, 401, 401, 429, 429}, statuses, "a direct client's forwarded header is not believed")
}

// Issue 36, finding 7: failed sign-ins were counted per token prefix, so
// anyone who knew the first 12 characters of a token could lock its owner
// out. Now nothing the client types picks the budget: per address, and a
// global budget across all addresses that bounds guessing from many.
func TestLoginLimitCannotLockOutAnotherUser(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	doc, tokens := tokensDoc(t, "op")
	victim := tokens["op"]
	f := replica(t, db, doc, false)
	for i := range 20 {
		c := browser(t, f)
		c.remoteAddr = fmt.Sprintf("192.0.2.%d:1234", i+1)
		require.Equal(t, http.StatusUnauthorized, c.post("/waterline/login", url.Values{"token": {victim[:12] + "-wrong"}}).Status)
	}
	owner := browser(t, f)
	owner.remoteAddr = "198.51.100.7:5555"
	require.Equal(t, http.StatusSeeOther, owner.post("/waterline/login", url.Values{"token": {victim}}).Status,
		"the owner signs in from their own address")

	// A successful sign-in costs nothing: the owner can sign in again and
	// again without spending their address's budget.
	for range 8 {
		again := browser(t, f)
		again.remoteAddr = "198.51.100.7:5555"
		require.Equal(t, http.StatusSeeOther, again.post("/waterline/login", url.Values{"token": {victim}}).Status)
	}

	// Guessing from many addresses meets the global budget (60 in a burst;
	// 20 are spent above).
	statuses := map[int]int{}
	for i := range 60 {
		c := browser(t, f)
		c.remoteAddr = fmt.Sprintf("10.1.%d.%d:1234", i/200, i%200+1)
		statuses[c.post("/waterline/login", url.Values{"token": {"guess"}}).Status]++
	}
	require.Equal(t, map[int]int{http.StatusUnauthorized: 40, http.StatusTooManyRequests: 20}, statuses)
	late := browser(t, f)
	late.remoteAddr = "198.51.100.99:1"
	res := late.post("/waterline/login", url.Values{"token": {"guess"}})
	require.Equal(t, http.StatusTooManyRequests, res.Status)
	require.NotEmpty(t, res.Header.Get("Retry-After"))
}
