package report_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/spillway/spillway/internal/report"
)

// chromium is Debian's headless Chromium (scripts/test installs it); the
// test is skipped by name without it, and fails in CI.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found (CI=true, so this is a failure): apt-get install chromium")
	}
	t.Skip("TestHTMLReportInChromium skipped: chromium not found (apt-get install chromium)")
	return ""
}

// The HTML report opens in headless Chromium from a file, with no console
// error and no request outside the file; its heatmap has 7 × 24 cells and
// the seeded peak's cell is the darkest. A screenshot is kept.
func TestHTMLReportInChromium(t *testing.T) {
	bin := chromium(t)
	w := world{peakFrom: 10, peakTo: 16, base: 0.02, peak: 0.30, astraExtra: 0.10, bigExtra: 0.10}
	r := build(t, report.Options{EventLog: writeLog(t, w.records(7)), EventLogNamed: true, Only: []string{"spillway"}})
	var page bytes.Buffer
	if err := report.HTML(&page, r); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, page.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				problems = append(problems, "console "+string(e.Type))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *network.EventRequestWillBeSent:
			if !strings.HasPrefix(e.Request.URL, "file://") && !strings.HasPrefix(e.Request.URL, "data:") {
				problems = append(problems, "outside request: "+e.Request.URL)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	type cell struct{ Day, Hour int }
	if err := chromedp.Do(bctx, chromedp.Navigate("file://"+path), chromedp.WaitVisible(chromedp.ID("heatmap"))); err != nil {
		t.Fatal(err)
	}
	cells, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#heatmap rect.cell").length`))
	if err != nil {
		t.Fatal(err)
	}
	// the cell whose fill is darkest (least luminance)
	darkest, err := chromedp.Run(bctx, chromedp.Evaluate[cell](`(() => {
		let best = null, bestL = 1e9;
		for (const c of document.querySelectorAll("#heatmap rect.cell")) {
			const m = getComputedStyle(c).fill.match(/\d+/g).map(Number);
			const l = 0.2126*m[0] + 0.7152*m[1] + 0.0722*m[2];
			if (l < bestL) { bestL = l; best = c; }
		}
		return {Day: +best.dataset.weekday, Hour: +best.dataset.hour};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if cells != 7*24 {
		t.Errorf("%d heatmap cells, want 168", cells)
	}
	if darkest.Day > 4 || darkest.Hour < 10 || darkest.Hour >= 16 {
		t.Errorf("the darkest cell is day %d %02d:00, not in the seeded weekday 10:00–16:00 peak", darkest.Day, darkest.Hour)
	}
	mu.Lock()
	if len(problems) > 0 {
		t.Errorf("the page is not self-contained or not clean: %v", problems)
	}
	mu.Unlock()
	dir := os.Getenv("SPILLWAY_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", ".tools", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err == nil {
		out := filepath.Join(dir, "report-html.png")
		if os.WriteFile(out, shot, 0o644) == nil {
			t.Logf("screenshot: %s", out)
		}
	}
}
