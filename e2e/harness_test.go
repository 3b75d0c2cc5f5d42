// Package e2e drives the real Tideline server (started in-process on a fresh
// database) with headless Chromium through Playwright. Run e2e/setup.sh once
// per machine, then `go test ./e2e/`; see e2e/README.md.
package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/playwright-community/playwright-go"
)

const (
	// playwrightModule is the Go module whose playwrightCliVersion names the
	// driver version (and so the driver folder) e2e/setup.sh builds.
	playwrightModule = "github.com/playwright-community/playwright-go"
	// chromiumPath is Debian's Chromium, installed by e2e/setup.sh.
	chromiumPath = "/usr/bin/chromium"
	// defaultTimeoutMS bounds every Playwright action, navigation and
	// expect-style wait.
	defaultTimeoutMS = 10_000
)

// chromiumArgs keep headless Chromium quiet on a closed network (without the
// background-networking flags it keeps dialling Google services).
var chromiumArgs = []string{
	"--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
}

var (
	// browser is the one Chromium all tests share; each test gets its own
	// isolated browser context from newPage.
	browser playwright.Browser
	// expect holds Playwright's web-first assertions (they retry until the
	// condition holds or defaultTimeoutMS passes), e.g.
	// expect.Locator(page.GetByTestId("brand")).ToHaveText("Tideline").
	expect = playwright.NewPlaywrightAssertions(defaultTimeoutMS)
	// repoRoot is the repository's absolute path (go test runs in e2e/).
	repoRoot string
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
		return 1
	}
	root, err := filepath.Abs("..")
	if err != nil {
		return fail("%v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return fail("cannot find the repository root above %s: %v", root, err)
	}
	repoRoot = root

	driverDir, err := driverDirectory()
	if err != nil {
		return fail("%v", err)
	}
	// playwright.Run creates a missing DriverDirectory and then reports a
	// vague "please install the driver"; check first to say what to do.
	if _, err := os.Stat(filepath.Join(driverDir, "package", "cli.js")); err != nil {
		return fail("the Playwright driver is missing (%v).\nRun e2e/setup.sh once on this machine, then go test ./e2e/ again.", err)
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		return fail("Chromium is missing (%v).\nRun e2e/setup.sh once on this machine, then go test ./e2e/ again.", err)
	}

	pw, err := playwright.Run(&playwright.RunOptions{
		DriverDirectory:     driverDir,
		SkipInstallBrowsers: true,
	})
	if err != nil {
		return fail("start Playwright from %s: %v\nRun e2e/setup.sh to rebuild the driver.", driverDir, err)
	}
	defer func() {
		if err := pw.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: stop Playwright: %v\n", err)
		}
	}()
	browser, err = pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath: playwright.String(chromiumPath),
		Headless:       playwright.Bool(true),
		Args:           chromiumArgs,
	})
	if err != nil {
		return fail("launch %s: %v\nRun e2e/setup.sh to (re)install Chromium.", chromiumPath, err)
	}
	defer func() {
		if err := browser.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: close Chromium: %v\n", err)
		}
	}()
	return m.Run()
}

// driverDirectory returns <repo>/.cache/playwright-driver/<version>, the
// folder e2e/setup.sh builds, where <version> is the pinned playwright-go's
// playwrightCliVersion (read from the module source, as setup.sh does).
// PLAYWRIGHT_DRIVER_PATH overrides it.
func driverDirectory() (string, error) {
	if dir := os.Getenv("PLAYWRIGHT_DRIVER_PATH"); dir != "" {
		return dir, nil
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", playwrightModule).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("locate %s's source with go list: %v", playwrightModule, err)
	}
	modDir := strings.TrimSpace(string(out))
	src, err := os.ReadFile(filepath.Join(modDir, "run.go"))
	if err != nil {
		return "", fmt.Errorf("read %s's run.go: %w", playwrightModule, err)
	}
	match := regexp.MustCompile(`(?m)^const playwrightCliVersion = "([0-9.]+)"`).FindSubmatch(src)
	if match == nil {
		return "", fmt.Errorf("no playwrightCliVersion constant in %s", filepath.Join(modDir, "run.go"))
	}
	return filepath.Join(repoRoot, ".cache", "playwright-driver", string(match[1])), nil
}

// pageOptions tune newPage.
type pageOptions struct {
	// BaseURL lets page.Goto take paths, e.g. srv.BaseURL then Goto("/waterline").
	BaseURL string
	// NoJavaScript disables JavaScript, for the scenarios that prove the
	// console works without it (plain forms and links).
	NoJavaScript bool
	// TimezoneID sets the browser's time zone (IANA), e.g. for the
	// console's "Browser local" time setting.
	TimezoneID string
}

// newPage returns a page in a fresh, isolated browser context (own cookies
// and storage) whose actions, navigations and waits time out after
// defaultTimeoutMS. At cleanup the context is closed; if the test failed, a
// full-page screenshot, the page's HTML and its console log are written to
// e2e/artifacts/<TestName>/ first, and that folder is logged.
func newPage(t *testing.T, opts ...pageOptions) playwright.Page {
	t.Helper()
	var o pageOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	ctxOpts := playwright.BrowserNewContextOptions{}
	if o.BaseURL != "" {
		ctxOpts.BaseURL = playwright.String(o.BaseURL)
	}
	if o.NoJavaScript {
		ctxOpts.JavaScriptEnabled = playwright.Bool(false)
	}
	if o.TimezoneID != "" {
		ctxOpts.TimezoneId = playwright.String(o.TimezoneID)
	}
	bctx, err := browser.NewContext(ctxOpts)
	if err != nil {
		t.Fatalf("e2e: new browser context: %v", err)
	}
	t.Cleanup(func() {
		if err := bctx.Close(); err != nil {
			t.Logf("e2e: close browser context: %v", err)
		}
	})
	bctx.SetDefaultTimeout(defaultTimeoutMS)
	bctx.SetDefaultNavigationTimeout(defaultTimeoutMS)
	page, err := bctx.NewPage()
	if err != nil {
		t.Fatalf("e2e: new page: %v", err)
	}

	// The browser's console and uncaught errors, kept for the artefacts
	// (Playwright calls these handlers on its own goroutine).
	var console struct {
		sync.Mutex
		lines []string
	}
	record := func(line string) {
		console.Lock()
		defer console.Unlock()
		console.lines = append(console.lines, line)
	}
	page.OnConsole(func(m playwright.ConsoleMessage) { record(fmt.Sprintf("console.%s: %s", m.Type(), m.Text())) })
	page.OnPageError(func(err error) { record(fmt.Sprintf("page error: %v", err)) })

	pageNumber := nextPageNumber(t)
	// Registered after the context's Close, so it runs before it.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		dir := artifactDir(t)
		prefix := filepath.Join(dir, fmt.Sprintf("page-%d", pageNumber))
		console.Lock()
		consoleLog := fmt.Sprintf("url: %s\n%s", page.URL(), strings.Join(append(console.lines, ""), "\n"))
		console.Unlock()
		var problems []string
		if _, err := page.Screenshot(playwright.PageScreenshotOptions{
			Path:     playwright.String(prefix + ".png"),
			FullPage: playwright.Bool(true),
			Timeout:  playwright.Float(5_000),
		}); err != nil {
			problems = append(problems, fmt.Sprintf("screenshot: %v", err))
		}
		if html, err := page.Content(); err != nil {
			problems = append(problems, fmt.Sprintf("HTML: %v", err))
		} else if err := os.WriteFile(prefix+".html", []byte(html), 0o644); err != nil {
			problems = append(problems, err.Error())
		}
		if err := os.WriteFile(prefix+".log", []byte(consoleLog), 0o644); err != nil {
			problems = append(problems, err.Error())
		}
		t.Logf("e2e: failure artefacts of page %d (%s): screenshot, HTML and console log in %s", pageNumber, page.URL(), dir)
		for _, p := range problems {
			t.Logf("e2e: could not save an artefact: %s", p)
		}
	})
	return page
}

// pageNumbers counts the pages of each test, so several pages of one test
// leave distinct artefacts (page-1.png, page-2.png, …).
var pageNumbers struct {
	sync.Mutex
	byTest map[string]int
}

func nextPageNumber(t *testing.T) int {
	pageNumbers.Lock()
	defer pageNumbers.Unlock()
	if pageNumbers.byTest == nil {
		pageNumbers.byTest = map[string]int{}
	}
	pageNumbers.byTest[t.Name()]++
	return pageNumbers.byTest[t.Name()]
}

// artifactDir returns (and creates) e2e/artifacts/<TestName>/, where a
// sub-test's name gives nested folders (TestSmoke/sqlite).
func artifactDir(t *testing.T) string {
	t.Helper()
	name := regexp.MustCompile(`[^A-Za-z0-9._/-]+`).ReplaceAllString(t.Name(), "_")
	name = strings.ReplaceAll(name, "..", "_")
	dir := filepath.Join(repoRoot, "e2e", "artifacts", filepath.FromSlash(name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("e2e: create artefacts folder: %v", err)
	}
	return dir
}

// gotoOK navigates page to url (a path when the page has a BaseURL) and
// fails the test unless the document answers 200.
func gotoOK(t *testing.T, page playwright.Page, url string) playwright.Response {
	t.Helper()
	resp, err := page.Goto(url)
	if err != nil {
		t.Fatalf("e2e: open %s: %v", url, err)
	}
	if resp == nil {
		t.Fatalf("e2e: open %s: no response", url)
	}
	if resp.Status() != http.StatusOK {
		t.Fatalf("e2e: open %s: status %d, want 200", url, resp.Status())
	}
	return resp
}

// must fails the test when a Playwright action or assertion failed; what
// describes the step, e.g. must(t, "brand text", expect.Locator(…).ToHaveText(…)).
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
