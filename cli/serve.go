package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/metrics"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/retention"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/timespec"
	"github.com/tidelinehq/tideline/web"
)

func runServe(ctx context.Context, e env, args []string) error {
	var cfg config
	fs := newFlagSet("serve", "tideline serve --addr 127.0.0.1:8080 --database postgres://tideline@db/tideline", e)
	cfg.bindServer(fs, e)
	noLoop := fs.Bool("no-loop", envOr(e, "TIDELINE_NO_LOOP", "") == "1", "do not run the scheduling loop (UI/API-only replica) (env TIDELINE_NO_LOOP=1)")
	var lf loopFlags
	lf.bind(fs, e)
	tokensFile := fs.String("tokens-file", envOr(e, "TIDELINE_TOKENS_FILE", ""), "YAML/JSON file of principals and token hashes (env TIDELINE_TOKENS_FILE; or the document itself in TIDELINE_TOKENS)")
	sessionSecret := fs.String("session-secret", envOr(e, "TIDELINE_SESSION_SECRET", ""), "key that signs console sessions, ≥16 chars; set the same on every replica (env TIDELINE_SESSION_SECRET; default: random per process)")
	sessionTTL := fs.Duration("session-ttl", 12*time.Hour, "how long a console login lasts")
	tlsCert := fs.String("tls-cert", envOr(e, "TIDELINE_TLS_CERT", ""), "TLS certificate file (with --tls-key): serve HTTPS")
	tlsKey := fs.String("tls-key", envOr(e, "TIDELINE_TLS_KEY", ""), "TLS private key file")
	trustProxy := fs.Bool("trust-proxy", envOr(e, "TIDELINE_TRUST_PROXY", "") == "1", "behind a TLS-terminating proxy: honour X-Forwarded-Proto=https for Secure cookies")
	trustedProxies := fs.String("trusted-proxy", envOr(e, "TIDELINE_TRUSTED_PROXIES", ""), "with --trust-proxy: the proxies' addresses or CIDR prefixes, comma-separated, whose X-Forwarded-For/-Proto are believed (env TIDELINE_TRUSTED_PROXIES; default loopback and private ranges)")
	defaultPolls, pollsEnvErr := web.DefaultMaxPollsPerPrincipal, error(nil)
	if v := envOr(e, "TIDELINE_MAX_POLLS_PER_PRINCIPAL", ""); v != "" {
		defaultPolls, pollsEnvErr = strconv.Atoi(v)
	}
	maxPolls := fs.Int("max-polls-per-principal", defaultPolls, "worker polls (long or not) one token may have in flight; past it a poll is answered 429 with Retry-After (env TIDELINE_MAX_POLLS_PER_PRINCIPAL)")
	publicURL := fs.String("public-url", envOr(e, "TIDELINE_PUBLIC_URL", ""), "the console's address as notification receivers should link to it, e.g. https://tideline.example.com (env TIDELINE_PUBLIC_URL; default http://ADDR)")
	lateAfter := fs.Duration("late-after", scheduling.DefaultLateAfter, "report a fire this much later than its occurrence as fire_late")
	allowPrivate := fs.Bool("allow-private-notifiers", envOr(e, "TIDELINE_ALLOW_PRIVATE_NOTIFIERS", "") == "1", "let notifiers post to loopback, private and link-local addresses (refused by default: a notifier URL must not reach internal services)")
	var sf shutdownFlags
	sf.bind(fs)
	allowPrivateTargets := fs.Bool("allow-private-targets", envOr(e, "TIDELINE_ALLOW_PRIVATE_TARGETS", "") == "1", "let HTTP targets call loopback, private and link-local addresses (refused by default, checked when saved and at every connection) (env TIDELINE_ALLOW_PRIVATE_TARGETS=1)")
	httpConcurrency := fs.Int("http-concurrency", scheduling.DefaultHTTPConcurrency, "HTTP target requests in flight at most, shared fairly: one namespace holds at most half, one of its hosts a quarter")
	demo := fs.Bool("demo", false, "seed example schedules and run sample workflows in-process, so the console shows live data (in "+demoSQLiteFile+" unless --database is given; delete that file to reset)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := cfg.validate(true); err != nil {
		return err
	}
	if *demo && cfg.DatabaseURL == "" {
		// Demo schedules in ./tideline.db would keep firing, with no worker,
		// under a later plain serve; they get a file of their own.
		cfg.DatabaseURL = "sqlite:" + demoSQLiteFile
	}
	if err := lf.validate(); err != nil {
		return err
	}
	if pollsEnvErr != nil {
		return usagef("invalid TIDELINE_MAX_POLLS_PER_PRINCIPAL: want a whole number")
	}
	if *maxPolls < 1 || *maxPolls > 100_000 {
		return usagef("invalid --max-polls-per-principal %d: want 1 to 100000", *maxPolls)
	}
	if err := sf.validate(cfg.Addr); err != nil {
		return err
	}
	if *httpConcurrency < 1 || *httpConcurrency > 4096 {
		return usagef("invalid --http-concurrency %d: want 1-4096", *httpConcurrency)
	}
	if *lateAfter < time.Second {
		return usagef("invalid --late-after %s: want at least 1s", *lateAfter)
	}
	if *publicURL != "" {
		if u, err := url.Parse(*publicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("invalid --public-url %q: want an absolute http:// or https:// URL", *publicURL)
		}
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	store, err := auth.Load(*tokensFile, e.getenv("TIDELINE_TOKENS"))
	if err != nil {
		return &UsageError{Msg: err.Error()}
	}
	if !store.Enabled() && !loopbackAddr(cfg.Addr) {
		return usagef("refusing to serve %s without authentication: anyone who can reach it could pause or trigger workflows.\n"+
			"Create a token with 'tideline token create --name you --role admin', put the printed entry in a tokens file,\n"+
			"and start with --tokens-file FILE (or bind a loopback address such as 127.0.0.1:8080)", cfg.Addr)
	}
	// Behind a proxy every request arrives from the proxy's address, so the
	// loopback rule of local mode would serve the whole network as admin.
	if !store.Enabled() && *trustProxy {
		return usagef("refusing --trust-proxy without authentication: behind a proxy every client looks like the proxy,\n" +
			"so local mode would serve anyone who reaches the proxy as admin.\n" +
			"Create a token with 'tideline token create --name you --role admin' and start with --tokens-file FILE")
	}
	var proxies []netip.Prefix
	if *trustedProxies != "" {
		if proxies, err = web.ParseTrustedProxies(*trustedProxies); err != nil || len(proxies) == 0 {
			return usagef("invalid --trusted-proxy %q: want addresses or CIDR prefixes, comma-separated (e.g. 10.0.0.5,10.1.0.0/16)", *trustedProxies)
		}
	}
	sessions, err := auth.NewSessions(*sessionSecret, *sessionTTL)
	if err != nil {
		return &UsageError{Msg: "invalid --session-secret: " + err.Error()}
	}
	logger := cfg.logger(e.stderr)
	if !store.Enabled() {
		logger.Warn("local mode: no tokens configured; only loopback clients are served")
	}

	if *publicURL == "" {
		scheme := "http"
		if *tlsCert != "" {
			scheme = "https"
		}
		*publicURL = scheme + "://" + cfg.Addr
	}
	cfg.Notify = scheduling.NotifyConfig{PublicURL: *publicURL, LateAfter: *lateAfter, AllowPrivate: *allowPrivate}
	cfg.Targets = scheduling.TargetConfig{AllowPrivate: *allowPrivateTargets, Concurrency: *httpConcurrency}
	a, err := openApp(ctx, &cfg, logger)
	if err != nil {
		return err
	}
	defer a.Close()
	db := a.db

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	m := metrics.New(db)
	a.service.ObserveNotifications(m.ObserveDelivery)
	a.service.ObserveTargets(m.ObserveTargetAttempt)
	m.ObserveTargetPool(a.service.TargetPool())
	srv := web.NewServer(web.Deps{DB: db, Service: a.service, Logger: logger, Version: Version, Namespace: cfg.Namespace, Metrics: m,
		Auth:                 web.Auth{Store: store, Sessions: sessions, SecureCookies: *tlsCert != "", TrustProxy: *trustProxy, TrustedProxies: proxies},
		MaxPollsPerPrincipal: *maxPolls})
	httpServer := web.NewHTTPServer(srv)

	loop := lf.loop(a.service, logger)
	loop.OnPass, loop.OnPrepared, loop.OnTask = m.ObservePass, m.ObservePrepared, m.ObserveTask
	loop.OnConnectionLost = m.ObserveConnectionLost
	if !*noLoop {
		// Not ctx: the loop fires through the drain after SIGTERM and
		// stops in shutdownServe.
		loop.Start(context.WithoutCancel(ctx))
		defer loop.Stop()
		backfills := lf.backfillWorker(a.service, logger)
		backfills.Start(ctx)
		defer backfills.Stop()
	}

	var execs executors
	if *demo {
		stopDemo, err := startDemo(ctx, a, cfg.namespaceOrDefault(), ln.Addr().String(), *tlsCert != "", store, logger)
		if err != nil {
			return err
		}
		execs.add("demo worker", stopDemo)
	}

	serveErr := make(chan error, 1)
	scheme := "http"
	if *tlsCert != "" {
		scheme = "https"
		go func() { serveErr <- httpServer.ServeTLS(ln, *tlsCert, *tlsKey) }()
	} else {
		go func() { serveErr <- httpServer.Serve(ln) }()
	}
	fmt.Fprintf(e.stdout, "Tideline %s is running. Open %s://%s/waterline\n", Version, scheme, ln.Addr())
	logger.Info("serving", "addr", ln.Addr().String(), "database", dialectName(db.Dialect().Name().String()))

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	return shutdownServe(sf, logger, a.service, &execs, loop, !*noLoop, httpServer)
}

// demoSQLiteFile holds serve --demo's data when no database is configured.
const demoSQLiteFile = "tideline-demo.db"

// loopbackAddr reports whether addr only accepts connections from this
// machine ("0.0.0.0:8080", ":8080" and public addresses do not).
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func dialectName(s string) string {
	if s == "pg" {
		return "postgres"
	}
	return s
}

func runMigrate(ctx context.Context, e env, args []string) error {
	var cfg config
	fs := newFlagSet("migrate", "tideline migrate --database postgres://tideline@db/tideline", e)
	cfg.bindDatabase(fs, e)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := cfg.validate(false); err != nil {
		return err
	}
	db, err := database.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	applied, err := migrations.Apply(ctx, db)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(e.stdout, "Database is up to date.")
		return nil
	}
	for _, name := range applied {
		fmt.Fprintf(e.stdout, "Applied %s\n", name)
	}
	return nil
}

// loopFlags are the scheduling loop's settings; serve and bench share
// them, so a bench measures the loop serve runs.
type loopFlags struct {
	period, ahead            time.Duration
	retainRuns, purgeDeleted string
	retention                retention.Policy
}

func (f *loopFlags) bind(fs *flag.FlagSet, e env) {
	fs.DurationVar(&f.period, "loop-period", time.Second, "how often the scheduling loop looks for due schedules")
	fs.DurationVar(&f.ahead, "fire-ahead", time.Minute, "PostgreSQL: prepare fires up to this long before their instant and commit them at it, so thousands due at once start on time (0 disables, at most 15m)")
	fs.StringVar(&f.retainRuns, "retain-runs", envOr(e, "TIDELINE_RETAIN_RUNS", "30d"), `delete finished runs (with their history) older than this, e.g. "30d", "720h"; 0 keeps them forever (a schedule's latest run is always kept) (env TIDELINE_RETAIN_RUNS)`)
	fs.StringVar(&f.purgeDeleted, "purge-deleted-after", envOr(e, "TIDELINE_PURGE_DELETED_AFTER", "0"), `delete deleted schedules with their audit stream and runs this long after deletion; 0 never does (env TIDELINE_PURGE_DELETED_AFTER)`)
}

func (f *loopFlags) validate() error {
	if f.period < 10*time.Millisecond {
		return usagef("invalid --loop-period %s: want at least 10ms", f.period)
	}
	// 15m: a million schedules sharing one instant take ~4.5 minutes to
	// prepare on a 2-core machine (docs/PERFORMANCE.md); longer holds their
	// rows locked for no gain.
	if f.ahead < 0 || f.ahead > 15*time.Minute {
		return usagef("invalid --fire-ahead %s: want 0 (off) up to 15m", f.ahead)
	}
	var err error
	f.retention, err = parseRetention(f.retainRuns, f.purgeDeleted)
	return err
}

// loop builds the scheduling loop over svc (after validate).
func (f *loopFlags) loop(svc *scheduling.Service, logger *slog.Logger) *scheduling.Loop {
	// Batches of 500: fewer, larger transactions when many schedules share
	// an instant (the tick's multi-row writes make that cheap).
	return &scheduling.Loop{Service: svc, Period: f.period, Limit: 500, Ahead: f.ahead, Logger: logger, Retention: f.retention}
}

// backfillWorker builds the backfill job worker beside the loop: its own
// goroutine, yielding while fires are due (prepared ones included).
func (f *loopFlags) backfillWorker(svc *scheduling.Service, logger *slog.Logger) *scheduling.BackfillWorker {
	return &scheduling.BackfillWorker{Service: svc, Period: f.period, Ahead: f.ahead, Logger: logger}
}

// parseRetention reads --retain-runs and --purge-deleted-after: "0" turns
// each off; otherwise a duration in any form the durations of specs take
// ("30d", "P30D", "720h", "30 days").
func parseRetention(retainRuns, purgeDeleted string) (retention.Policy, error) {
	var r retention.Policy
	for _, f := range []struct {
		name, raw string
		dst       *time.Duration
	}{{"retain-runs", retainRuns, &r.KeepRuns}, {"purge-deleted-after", purgeDeleted, &r.PurgeDeletedAfter}} {
		if f.raw == "0" || f.raw == "" {
			continue
		}
		d, err := timespec.ParseDuration(f.raw)
		if err != nil || d < time.Hour {
			return r, usagef("invalid --%s %q: want 0 (off) or a duration of an hour or more, e.g. 30d", f.name, f.raw)
		}
		*f.dst = d
	}
	return r, nil
}
