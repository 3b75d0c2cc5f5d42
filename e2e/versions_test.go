package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// versionsFixture makes a schedule with three versions: created, re-timed
// with a new note, then a label added.
func versionsFixture(t *testing.T, api *apiClient, id string) {
	t.Helper()
	api.createSchedule(sched{ID: id, Cron: "0 2 * * *", Timezone: "America/New_York", WorkflowType: "billing.ExportInvoices",
		Note: "nightly export", Labels: map[string]string{"team": "billing"}})
	api.must(http.MethodPatch, "/schedules/"+id, map[string]any{
		"spec": map[string]any{"cron_expressions": []string{"30 6 * * 1-5"}, "timezone": "America/New_York"},
		"note": "moved after the warehouse load (CHG-2291)"}, http.StatusOK, nil)
	api.must(http.MethodPatch, "/schedules/"+id, map[string]any{
		"labels": map[string]string{"team": "billing", "tier": "1"}, "jitter_seconds": 30}, http.StatusOK, nil)
}

// Scenario: the Versions tab lists who changed what from where; two
// versions compare side by side; Revert shows the next five fire times
// before and after on its confirm page and records a new version. The same
// with JavaScript off (plain links and forms).
func TestVersionsTabCompareAndRevert(t *testing.T) {
	for _, js := range []bool{true, false} {
		name := "js"
		if !js {
			name = "nojs"
		}
		t.Run(name, func(t *testing.T) {
			each := forEachDatabase
			if !js {
				// Plain forms and links do not depend on the database: one is enough.
				each = func(t *testing.T, opts serverOptions, fn func(t *testing.T, srv *server)) {
					t.Run("sqlite", func(t *testing.T) { fn(t, startServer(t, opts)) })
				}
			}
			each(t, noLoop, func(t *testing.T, srv *server) {
				api := newAPI(t, srv)
				versionsFixture(t, api, "nightly-billing-export")

				page := newPage(t, pageOptions{BaseURL: srv.BaseURL, NoJavaScript: !js})
				gotoOK(t, page, "/waterline/schedules/nightly-billing-export")
				must(t, "Versions tab", page.GetByTestId("tab-versions").Click())
				rows := page.GetByTestId("version-row")
				must(t, "three versions", expect.Locator(rows).ToHaveCount(3))
				must(t, "newest first", expect.Locator(rows.First()).ToHaveAttribute("data-n", "3"))
				must(t, "what changed", expect.Locator(rows.First().GetByTestId("version-changed")).ToHaveText("jitter_seconds, labels"))
				must(t, "from where", expect.Locator(rows.First().GetByTestId("version-source")).ToHaveText("api"))
				must(t, "current", expect.Locator(rows.First().GetByTestId("version-current")).ToBeVisible())
				saveShot(t, page, "console-versions")

				// Compare v1 with v3.
				must(t, "pick from v1", page.Locator(`[data-testid="version-row"][data-n="1"] [data-testid="pick-from"]`).Check())
				must(t, "pick to v3", page.Locator(`[data-testid="version-row"][data-n="3"] [data-testid="pick-to"]`).Check())
				must(t, "compare", page.GetByTestId("versions-compare").Click())
				must(t, "diff page", expect.Page(page).ToHaveURL(regexp.MustCompile(`/versions/diff\?(to=3&from=1|from=1&to=3)$`)))
				changed := page.Locator(`[data-testid="diff-row"][data-changed="true"]`)
				must(t, "four fields differ", expect.Locator(changed).ToHaveCount(4))
				note := page.Locator(`[data-testid="diff-row"][data-field="note"]`)
				must(t, "old note", expect.Locator(note.Locator("del")).ToHaveText("nightly export"))
				must(t, "new note", expect.Locator(note.Locator("ins")).ToHaveText("moved after the warehouse load (CHG-2291)"))
				saveShot(t, page, "console-version-diff")

				// Revert to v1 from the comparison; the confirm shows the fire times.
				must(t, "revert from the diff", page.GetByTestId("diff-revert").Click())
				must(t, "five fires now", expect.Locator(page.GetByTestId("fire-before")).ToHaveCount(5))
				must(t, "five fires after", expect.Locator(page.GetByTestId("fire-after")).ToHaveCount(5))
				must(t, "four changes", expect.Locator(page.Locator(`[data-testid="revert-changes"] [data-testid="change"]`)).ToHaveCount(4))
				before, err := page.GetByTestId("fire-before").First().Locator("time").GetAttribute("datetime")
				must(t, "fire before", err)
				after, err := page.GetByTestId("fire-after").First().Locator("time").GetAttribute("datetime")
				must(t, "fire after", err)
				if before == after {
					t.Fatalf("the next fire is %s before and after the revert; the spec changes it", before)
				}
				saveShot(t, page, "console-revert-confirm")
				must(t, "reason", page.GetByTestId("revert-reason").Fill("back to 02:00 after the incident"))
				must(t, "revert", page.GetByTestId("revert-submit").Click())
				must(t, "flash", expect.Locator(page.GetByTestId("flash")).ToContainText("Reverted nightly-billing-export to version 1."))

				var list struct {
					Versions []struct {
						Source     string `json:"source"`
						RevertedTo *int64 `json:"reverted_to"`
					} `json:"versions"`
				}
				api.must(http.MethodGet, "/schedules/nightly-billing-export/versions", nil, http.StatusOK, &list)
				if n := len(list.Versions); n != 4 || list.Versions[3].Source != "revert" || list.Versions[3].RevertedTo == nil || *list.Versions[3].RevertedTo != 1 {
					t.Fatalf("versions after the revert: %+v", list.Versions)
				}
				must(t, "back to the tab", page.GetByTestId("tab-versions").Click())
				must(t, "four versions", expect.Locator(rows).ToHaveCount(4))
				must(t, "the revert on top", expect.Locator(rows.First().GetByTestId("version-reverted-to")).ToHaveText("(back to v1)"))
			})
		})
	}
}

// saveShot writes the page at 1440×900 and at 390×844 (whole pages) into
// the test's artefact folder, and into docs/ with TIDELINE_SCREENSHOTS=1.
func saveShot(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	dirs := []string{artifactDir(t)}
	if os.Getenv(screenshotsEnv) == "1" && t.Name() == "TestVersionsTabCompareAndRevert/js/sqlite" {
		dirs = append(dirs, filepath.Join(repoRoot, "docs"))
	}
	for _, size := range []struct {
		suffix string
		w, h   int
	}{{"", 1440, 900}, {"-phone", 390, 844}} {
		must(t, "viewport", page.SetViewportSize(size.w, size.h))
		for _, dir := range dirs {
			_, err := page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(filepath.Join(dir, name+size.suffix+".png")),
				FullPage: playwright.Bool(true), Animations: playwright.ScreenshotAnimationsDisabled})
			must(t, "screenshot "+name, err)
		}
	}
	must(t, "viewport", page.SetViewportSize(1440, 900))
}
