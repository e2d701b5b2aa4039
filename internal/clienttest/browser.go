package clienttest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Browser is Debian's headless Chromium (scripts/test installs it),
// driven over the DevTools protocol (chromedp). It notes every console
// error or warning, uncaught exception and request to a URL the test does
// not allow.
type Browser struct {
	// Ctx runs chromedp actions in the browser's one tab.
	Ctx context.Context

	mu       sync.Mutex
	problems []string
}

// NewBrowser starts Chromium for t (closed when t ends), or skips t (fails
// it when CI=true) without it. allowed says which request URLs the page
// may make; any other is a problem.
func NewBrowser(t testing.TB, allowed func(url string) bool) *Browser {
	t.Helper()
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium not found (CI=true, so this is a failure): apt-get install chromium")
		}
		t.Skipf("SKIPPED %s: chromium not found (apt-get install chromium)", t.Name())
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
		// nothing of its own on the network: no updates, no sync, no QUIC probes
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA(); cancel() })
	b := &Browser{Ctx: bctx}
	if err := chromedp.Listen(bctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				b.problems = append(b.problems, "console "+string(e.Type))
			}
		case *runtime.EventExceptionThrown:
			b.problems = append(b.problems, "exception: "+e.ExceptionDetails.Text)
		case *network.EventRequestWillBeSent:
			if !allowed(e.Request.URL) {
				b.problems = append(b.problems, "outside request: "+e.Request.URL)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	return b
}

// Problems are what the page did wrong so far.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.problems)
}

// SaveArtifact keeps a test's file (a screenshot) under
// $SPILLWAY_ARTIFACTS, else .tools/artifacts in the repository.
func SaveArtifact(t testing.TB, name string, data []byte) {
	t.Helper()
	dir := os.Getenv("SPILLWAY_ARTIFACTS")
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			t.Logf("artifact %s not kept: %v", name, err)
			return
		}
		dir = filepath.Join(root, ".tools", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("artifact %s not kept: %v", name, err)
		return
	}
	out := filepath.Join(dir, name)
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Logf("artifact %s not kept: %v", name, err)
		return
	}
	t.Logf("artifact: %s", out)
}
