package e2e

import (
	"path/filepath"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// TestFormAtTimesAndBounds: the create form's one-off times and end bound
// are previewed live (the at times listed, the bound in the description),
// a bad at line is shown under its input, and the form saves them. It
// leaves form-at-1440.png and form-at-390.png in its artifacts folder.
func TestFormAtTimesAndBounds(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		must(t, "viewport", page.SetViewportSize(1440, 900))
		gotoOK(t, page, "/waterline/schedules/new")
		fill(t, page, "schedule_id", "year-end-close")
		fill(t, page, "workflow_type", "finance.YearEndClose")
		must(t, "unfold one-off times", page.GetByTestId("more-when").Locator("summary").Click())
		fill(t, page, "at", "2096-12-24T18:00:00-05:00\nsoon")
		must(t, "bad at line under its input", expect.Locator(page.GetByTestId("field-at").GetByTestId("field-error")).ToContainText(`line 2: "soon"`))
		fill(t, page, "at", "2096-12-24T18:00:00-05:00\n2096-12-31T17:00:00-05:00")
		fill(t, page, "end_at", "2096-12-31T23:59:59-05:00")
		desc := page.GetByTestId("spec-preview").GetByTestId("spec-description")
		must(t, "described", expect.Locator(desc).ToContainText("Once at each of 2096-12-24T23:00:00Z, 2096-12-31T22:00:00Z"))
		must(t, "bound described", expect.Locator(desc).ToContainText("until 2096-12-31T23:59:59-05:00"))
		must(t, "two fire times", expect.Locator(page.GetByTestId("preview-fire-time")).ToHaveCount(2))
		dir := artifactDir(t)
		_, err := page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(filepath.Join(dir, "form-at-1440.png")), FullPage: playwright.Bool(true)})
		must(t, "screenshot", err)
		must(t, "phone", page.SetViewportSize(390, 844))
		must(t, "scroll to the at input", page.GetByTestId("input-at").ScrollIntoViewIfNeeded())
		_, err = page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(filepath.Join(dir, "form-at-390.png"))})
		must(t, "screenshot", err)
		must(t, "desktop", page.SetViewportSize(1440, 900))
		must(t, "save", page.GetByTestId("form-submit").Click())
		must(t, "saved", expect.Locator(page.GetByTestId("schedule-id")).ToHaveText("year-end-close"))
	})
}
