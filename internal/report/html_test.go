package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/report"
)

// The HTML report opens in headless Chromium from a file, with no console
// error and no request outside the file; its heatmap has 7 × 24 cells and
// the seeded peak's cell is the darkest. A screenshot is kept.
func TestHTMLReportInChromium(t *testing.T) {
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
	br := clienttest.NewBrowser(t, func(url string) bool {
		return strings.HasPrefix(url, "file://") || strings.HasPrefix(url, "data:")
	})
	bctx := br.Ctx
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
	if p := br.Problems(); len(p) > 0 {
		t.Errorf("the page is not self-contained or not clean: %v", p)
	}
	clienttest.SaveArtifact(t, "report-html.png", shot)
}
