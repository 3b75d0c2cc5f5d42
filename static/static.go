// Package static embeds the console's assets: the stylesheet, the console's
// small script and a vendored htmx (no CDN: operators' browsers may be offline).
package static

import (
	"embed"
	"net/http"
)

//go:embed *.css *.js
var files embed.FS

// Handler serves the embedded files; the caller strips the URL prefix.
func Handler() http.Handler {
	fs := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Asset names change with their content (htmx) or are tiny; an hour of
		// caching keeps pages fast without pinning a stale stylesheet for long.
		w.Header().Set("Cache-Control", "public, max-age=3600")
		fs.ServeHTTP(w, r)
	})
}
