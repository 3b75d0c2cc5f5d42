package cli

import (
	"context"
	"log/slog"

	"github.com/tidelinehq/tideline/auth"
)

// startDemo seeds the demo schedules and runs the sample workflows
// in-process against this server's own worker API.
func startDemo(ctx context.Context, a *app, namespace, addr string, tls bool, store *auth.Store, logger *slog.Logger) error {
	_ = ctx
	_ = a
	_ = namespace
	_ = addr
	_ = tls
	_ = store
	logger.Warn("demo mode is not available in this build")
	return nil
}
