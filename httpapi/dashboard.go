package httpapi

import (
	"embed"
	"io/fs"
	"net/http"
)

// The dashboard: a single page (ui/index.html, ui/app.js, ui/app.css,
// embedded in the binary, nothing fetched from elsewhere) served under
// /ui/ by the same handler as the API, with GET / redirecting to it. The
// page reads and acts only through the JSON API, with relative URLs, so
// it works wherever the host mounts the handler (under a prefix with
// http.StripPrefix too). Its static files need no credential; the API
// calls it makes do (Options.Token or Options.Authorize).

//go:embed ui
var uiFiles embed.FS

// uiCSP allows the page its own scripts, styles and API calls, and
// nothing else: no inline script, no other origin, no framing.
const uiCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

var uiServer = func() http.Handler {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic("httpapi: embedded ui: " + err.Error())
	}
	return http.StripPrefix("/ui", http.FileServerFS(sub))
}()

// uiHeaders sets the security headers of every dashboard response.
func uiHeaders(h http.Header) {
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
}

// uiRedirect answers GET / with a redirect to the dashboard. The
// location is relative ("ui/"), so it stays under the host's prefix.
func (a *api) uiRedirect(w http.ResponseWriter, _ *http.Request) error {
	uiHeaders(w.Header())
	w.Header().Set("Location", "ui/")
	w.WriteHeader(http.StatusFound)
	return nil
}

// uiAsset serves the dashboard's embedded files; a missing one is the
// API's JSON 404.
func (a *api) uiAsset(w http.ResponseWriter, r *http.Request) error {
	name := r.URL.Path[len("/ui/"):]
	if name != "" {
		if _, err := fs.Stat(uiFiles, "ui/"+name); err != nil {
			return &httpError{status: http.StatusNotFound, kind: kindNotFound, msg: "no dashboard file " + r.URL.Path}
		}
	}
	uiHeaders(w.Header())
	uiServer.ServeHTTP(w, r)
	return nil
}
