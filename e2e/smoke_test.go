package e2e

import (
	"net/http"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// TestSmoke proves the whole chain: the real server on each database, the
// console's layout in Chromium, and its stylesheet applied.
func TestSmoke(t *testing.T) {
	forEachDatabase(t, serverOptions{}, func(t *testing.T, srv *server) {
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})

		var doc playwright.Response
		css, err := page.ExpectResponse("**/static/tideline.css", func() error {
			var err error
			doc, err = page.Goto("/waterline")
			return err
		})
		must(t, "open /waterline and load /static/tideline.css", err)
		if doc.Status() != http.StatusOK {
			t.Fatalf("/waterline: status %d, want 200", doc.Status())
		}
		if css.Status() != http.StatusOK {
			t.Fatalf("/static/tideline.css: status %d, want 200", css.Status())
		}

		must(t, "brand", expect.Locator(page.GetByTestId("brand")).ToHaveText("Tideline"))
		must(t, "footer", expect.Locator(page.GetByTestId("footer")).ToContainText("Tideline"))
		// tideline.css sets body { background: var(--bg) } with --bg: #f6f7f9;
		// without the stylesheet the body is transparent.
		must(t, "stylesheet applied", expect.Locator(page.Locator("body")).ToHaveCSS("background-color", "rgb(246, 247, 249)"))

		// The same page without JavaScript (the no-JS scenarios' setup).
		noJS := newPage(t, pageOptions{BaseURL: srv.BaseURL, NoJavaScript: true})
		gotoOK(t, noJS, "/waterline")
		must(t, "brand without JavaScript", expect.Locator(noJS.GetByTestId("brand")).ToHaveText("Tideline"))
		must(t, "<noscript> content shown without JavaScript", noJSCheck(noJS))
	})
}

// noJSCheck confirms JavaScript really is off in the page: a <noscript>
// element's content is only parsed as markup when scripting is disabled.
func noJSCheck(page playwright.Page) error {
	if err := page.SetContent(`<noscript><p id="no-js">off</p></noscript>`); err != nil {
		return err
	}
	return expect.Locator(page.Locator("#no-js")).ToHaveText("off")
}
