package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/events"
)

// reportLog writes an event log in which capacity errors come from 09:00
// to 17:00 UTC only, every day for two weeks.
func reportLog(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	for h := 0; h < 14*24; h++ {
		for i := 0; i < 10; i++ {
			at := start.Add(time.Duration(h)*time.Hour + time.Duration(i)*time.Minute)
			class := "ok"
			if at.Hour() >= 9 && at.Hour() < 17 && i < 4 {
				class = "capacity"
			} else if i == 0 && h%5 == 0 {
				class = "capacity"
			}
			enc.Encode(events.Record{TS: at, RequestID: "r", Attempt: 1, Source: "gateway", Model: "gpt-6-astra", RequestedModel: "gpt-6-astra", Class: class, EstInputTokens: 1000})
		}
	}
	return path
}

// spillway report end to end: the JSON, the learned window saved to the
// queue's database, and queue add --window quiet using it.
func TestReportCommand(t *testing.T) {
	t.Parallel()
	log := reportLog(t)
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "q.db")
	env := map[string]string{"HOME": dir, "XDG_CONFIG_HOME": filepath.Join(dir, "config")}

	out, errs, code := run(t, env, "", "report", "--events", log, "--tz", "UTC", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Schema string `json:"schema"`
		Quiet  *struct {
			Spec string `json:"spec"`
		} `json:"quiet_window"`
		Peak *struct {
			Spec string `json:"spec"`
		} `json:"peak_window"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Quiet == nil || r.Quiet.Spec != "17:00-09:00" || r.Peak == nil || r.Peak.Spec != "09:00-17:00" {
		t.Fatalf("quiet %+v peak %+v, want 17:00-09:00 and 09:00-17:00", r.Quiet, r.Peak)
	}

	_, errs, code = run(t, env, "", "report", "--events", log, "--tz", "UTC", "--save-windows", "--db", db)
	if code != 0 || !strings.Contains(errs, "saved the quiet window 17:00-09:00 (UTC)") {
		t.Fatalf("--save-windows: exit %d: %s", code, errs)
	}
	if _, errs, code = run(t, env, "", "queue", "--db", db, "add", "--name", "nightly", "--window", "quiet", "--prompt", "hi"); code != 0 {
		t.Fatalf("queue add: %s", errs)
	}
	out, _, _ = run(t, env, "", "queue", "--db", db, "ls")
	if !strings.Contains(out, "nightly") || !strings.Contains(out, "quiet: learned 17:00-09:00 UTC") {
		t.Fatalf("queue ls does not say which quiet window:\n%s", out)
	}

	// html to a file; text to stdout with findings
	page := filepath.Join(dir, "r.html")
	if _, errs, code = run(t, env, "", "report", "--events", log, "--format", "html", "-o", page); code != 0 {
		t.Fatal(errs)
	}
	if b, _ := os.ReadFile(page); !strings.Contains(string(b), `<svg id="heatmap"`) || strings.Contains(string(b), "http://") || strings.Contains(string(b), "https://") {
		t.Fatal("the HTML report is not one self-contained page")
	}
	out, _, code = run(t, env, "", "report", "--events", log, "--tz", "UTC", "--color", "never")
	if code != 0 || !strings.Contains(out, "Findings") || !strings.Contains(out, "On weekdays between 09:00 and 17:00 you hit capacity") || strings.Contains(out, "\x1b[") {
		t.Fatalf("text report:\n%s", out)
	}
}

// With nothing to read, the report says where it looked and how to give
// it something.
func TestAnEmptyReportSaysWhereItLooked(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	out, errOut, code := run(t, map[string]string{"HOME": home}, "", "report")
	want := "spillway report\n\nNothing to report: no source was there. Looked for:\n" +
		"  spillway " + filepath.Join(home, ".local/state/spillway/events.jsonl") + " (not there)\n" +
		"  codex " + filepath.Join(home, ".codex") + " (not there)\n" +
		"  claude " + filepath.Join(home, ".claude") + " (not there)\n" +
		"  gemini " + filepath.Join(home, ".gemini") + " (not there)\n" +
		"spillway serve writes the event log as requests go through it; or name what to read:\n--events FILE, --text-log FILE, --codex-home, --claude-home, --gemini-home.\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, errOut, out, want)
	}
}

func TestReportCommandErrors(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOME": t.TempDir()}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"report", "--tz", "Mars/Olympus"}, ExitUsage, "--tz"},
		{[]string{"report", "--since", "last tuesday"}, ExitUsage, "write a date"},
		{[]string{"report", "--format", "pdf"}, ExitUsage, "text, json or html"},
		{[]string{"report", "--only", "codx"}, ExitFail, "no source \"codx\""},
		{[]string{"report", "--events", "/nonexistent/events.jsonl"}, ExitFail, "no event log"},
		{[]string{"report", "--text-log", "/nonexistent.log"}, ExitFail, "--text-log"},
		{[]string{"report", "--events", env["HOME"]}, ExitUsage, "--events " + env["HOME"] + " is a directory: name the event log file"},
		{[]string{"report", "--since", "2026-11-05", "--until", "2026-11-03"}, ExitUsage, "--until 2026-11-03 is not after --since 2026-11-05: the range would be empty"},
		{[]string{"report", "--text-log", os.DevNull, "--pattern", "("}, ExitUsage, "--pattern"},
		// nothing learned: nothing is saved, and the default stays
		{[]string{"report", "--text-log", os.DevNull, "--save-windows", "--db", "sqlite:" + filepath.Join(t.TempDir(), "q.db")}, ExitFail, "nothing to save"},
	} {
		_, errs, code := run(t, env, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.says) {
			t.Errorf("%v: exit %d, want %d; stderr %q lacks %q", c.args, code, c.code, errs, c.says)
		}
	}
}
