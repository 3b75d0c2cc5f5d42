// Package static embeds the console's assets: the stylesheet, the console's
// small script, its icon and a vendored htmx (no CDN: operators' browsers may be offline).
package static

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed *.css *.js *.svg
var files embed.FS

// Handler serves the embedded files; the caller strips the URL prefix.
func Handler() http.Handler {
	server := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Files only: FileServer would list a directory ("/static/"), which
		// tells a visitor nothing they need and the build's contents.
		if f, err := files.Open(strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")); err != nil || isDir(f) {
			http.NotFound(w, r)
			return
		}
		// Asset names change with their content (htmx) or are tiny; an hour of
		// caching keeps pages fast without pinning a stale stylesheet for long.
		w.Header().Set("Cache-Control", "public, max-age=3600")
		server.ServeHTTP(w, r)
	})
}

func isDir(f fs.File) bool {
	defer f.Close()
	info, err := f.Stat()
	return err != nil || info.IsDir()
}
