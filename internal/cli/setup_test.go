package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/setup"
)

// runSetup executes "spillway setup ARGS" through the command setupCmd
// returns, as the root command will once it is registered.
func runSetup(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	app := &App{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}
	cmd := app.setupCmd()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err := cmd.Execute()
	if err == nil {
		return out.String(), errb.String(), ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return out.String(), errb.String() + ee.Error(), ee.code
	}
	return out.String(), errb.String() + err.Error(), ExitUsage
}

// setupEnv is an environment with its own HOME (no spillway.yaml there) and
// CODEX_HOME.
func setupEnv(t *testing.T) (env map[string]string, codexHome string) {
	t.Helper()
	home := t.TempDir()
	codexHome = filepath.Join(home, ".codex-test")
	return map[string]string{"HOME": home, "CODEX_HOME": codexHome}, codexHome
}

func TestSetupCodexPrint(t *testing.T) {
	t.Parallel()
	env, codexHome := setupEnv(t)
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"defaults", env, []string{"codex", "--print"}, setup.CodexBlock("http://127.0.0.1:8787", "OPENAI_API_KEY")},
		{"url and key", env, []string{"codex", "--print", "--url", "http://127.0.0.1:9000/v1", "--env-key", "SPILLWAY_KEY"},
			setup.CodexBlock("http://127.0.0.1:9000", "SPILLWAY_KEY")},
		{"listen from the config, wildcard host", withConfig(t, env, "listen: 0.0.0.0:9787\ngateway: {keys: [{name: team, key: \"sha256:1bd8fd47297046f993e608e398d5905b00a33e163c6b1172dd38887fed05ed6a\"}]}\n"), []string{"codex", "--print"},
			setup.CodexBlock("http://127.0.0.1:9787", "OPENAI_API_KEY")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runSetup(t, tt.env, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if out != tt.want {
				t.Errorf("stdout:\n%s\nwant:\n%s", out, tt.want)
			}
			if !strings.Contains(errOut, "before the first [table]") {
				t.Errorf("stderr: %q", errOut)
			}
		})
	}
	if _, err := os.Stat(codexHome); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--print touched %s: %v", codexHome, err)
	}
	if !strings.Contains(tests[2].want, `base_url = "http://127.0.0.1:9787/v1"`) {
		t.Error("listen not used")
	}
}

// withConfig adds a spillway.yaml with this text to a copy of env.
func withConfig(t *testing.T, env map[string]string, yaml string) map[string]string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "spillway.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	e := map[string]string{"SPILLWAY_CONFIG": p}
	for k, v := range env {
		e[k] = v
	}
	return e
}

func TestSetupCodexWrite(t *testing.T) {
	t.Parallel()
	t.Run("existing config: merged, backup, undo, then nothing to do", func(t *testing.T) {
		env, codexHome := setupEnv(t)
		if err := os.MkdirAll(codexHome, 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(codexHome, "config.toml")
		old := "model = \"gpt-6.1-sol\"\nmodel_provider = \"openai\"\n\n[profiles.fast]\nmodel = \"gpt-6-luna\"\n"
		if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runSetup(t, env, "codex")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		want, err := setup.ApplyCodex([]byte(old), "http://127.0.0.1:8787", "OPENAI_API_KEY")
		if err != nil {
			t.Fatal(err)
		}
		if got := readTestFile(t, path); got != string(want) {
			t.Errorf("config.toml:\n%s", got)
		}
		backups, _ := filepath.Glob(filepath.Join(codexHome, "config.toml.spillway-backup-*"))
		if len(backups) != 1 || readTestFile(t, backups[0]) != old {
			t.Fatalf("backups %v", backups)
		}
		for _, s := range []string{"updated " + path, "http://127.0.0.1:8787/v1", "[model_providers.spillway]",
			"old file kept as " + backups[0], "undo: cp " + backups[0] + " " + path, "spillway serve"} {
			if !strings.Contains(out, s) {
				t.Errorf("stdout lacks %q:\n%s", s, out)
			}
		}
		if !strings.Contains(errOut, "OPENAI_API_KEY is not set") {
			t.Errorf("stderr: %q", errOut)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("mode: %v %v", fi.Mode(), err)
		}

		env["OPENAI_API_KEY"] = "sk-test"
		out, errOut, code = runSetup(t, env, "codex")
		if code != 0 || !strings.Contains(out, "nothing changed") || errOut != "" {
			t.Errorf("second run: exit %d\n%s\n%s", code, out, errOut)
		}
		if got := readTestFile(t, path); got != string(want) {
			t.Errorf("second run changed the file:\n%s", got)
		}
		if b, _ := filepath.Glob(filepath.Join(codexHome, "config.toml.spillway-backup-*")); len(b) != 1 {
			t.Errorf("backups after the second run: %v", b)
		}
	})

	t.Run("no config yet, --codex-home, --env-key, --url", func(t *testing.T) {
		env, _ := setupEnv(t)
		dir := filepath.Join(t.TempDir(), "elsewhere")
		out, errOut, code := runSetup(t, env, "codex", "--codex-home", dir, "--env-key", "GW_KEY", "--url", "http://localhost:9000")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		path := filepath.Join(dir, "config.toml")
		if got := readTestFile(t, path); got != setup.CodexBlock("http://localhost:9000", "GW_KEY") {
			t.Errorf("config.toml:\n%s", got)
		}
		if !strings.Contains(out, "wrote "+path) || !strings.Contains(out, "undo: rm "+path) || strings.Contains(out, "old file kept") {
			t.Errorf("stdout:\n%s", out)
		}
		if !strings.Contains(errOut, "GW_KEY is not set") {
			t.Errorf("stderr: %q", errOut)
		}
		if _, err := os.Stat(filepath.Join(env["CODEX_HOME"], "config.toml")); !errors.Is(err, os.ErrNotExist) {
			t.Error("CODEX_HOME written despite --codex-home")
		}
	})

	t.Run("HOME/.codex when CODEX_HOME is unset", func(t *testing.T) {
		home := t.TempDir()
		_, errOut, code := runSetup(t, map[string]string{"HOME": home, "OPENAI_API_KEY": "x"}, "codex")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		readTestFile(t, filepath.Join(home, ".codex", "config.toml"))
	})

	t.Run("invalid config.toml", func(t *testing.T) {
		env, codexHome := setupEnv(t)
		if err := os.MkdirAll(codexHome, 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(codexHome, "config.toml")
		old := "model = \"o3\"\n\n[tui\n"
		if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runSetup(t, env, "codex")
		if code != ExitFail || out != "" || !strings.Contains(errOut, path+": line 3") || !strings.Contains(errOut, "[tui") {
			t.Errorf("exit %d\nstdout %q\nstderr %s", code, out, errOut)
		}
		if readTestFile(t, path) != old {
			t.Error("file changed")
		}
	})

	for _, args := range [][]string{
		{"codex", "--env-key", "NOT-A-VAR"},
		{"codex", "--url", "127.0.0.1:8787"},
		{"codex", "extra"},
	} {
		env, codexHome := setupEnv(t)
		if _, errOut, code := runSetup(t, env, args...); code != ExitUsage {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
		if _, err := os.Stat(codexHome); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%v wrote %s", args, codexHome)
		}
	}
	if _, errOut, code := runSetup(t, map[string]string{}, "codex", "--url", "http://127.0.0.1:8787"); code != ExitUsage || !strings.Contains(errOut, "--codex-home") {
		t.Errorf("no home: exit %d: %s", code, errOut)
	}
}

func TestSetupClaude(t *testing.T) {
	t.Parallel()
	env, _ := setupEnv(t)
	tests := []struct {
		name string
		env  map[string]string
		args []string
		line string
	}{
		{"sh", env, []string{"claude", "--shell", "sh"}, "export ANTHROPIC_BASE_URL=http://127.0.0.1:8787"},
		{"fish", env, []string{"claude", "--shell", "fish"}, "set -gx ANTHROPIC_BASE_URL http://127.0.0.1:8787"},
		{"powershell", env, []string{"claude", "--shell", "powershell"}, `$env:ANTHROPIC_BASE_URL = "http://127.0.0.1:8787"`},
		{"default sh", env, []string{"claude"}, "export ANTHROPIC_BASE_URL=http://127.0.0.1:8787"},
		{"default from $SHELL", withConfig(t, map[string]string{"HOME": env["HOME"], "SHELL": "/usr/bin/fish"}, "listen: 127.0.0.1:9787\n"),
			[]string{"claude"}, "set -gx ANTHROPIC_BASE_URL http://127.0.0.1:9787"},
		{"--url drops /v1", env, []string{"claude", "--shell", "bash", "--url", "http://127.0.0.1:9000/v1"}, "export ANTHROPIC_BASE_URL=http://127.0.0.1:9000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runSetup(t, tt.env, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.HasSuffix(out, "\n"+tt.line+"\n") {
				t.Errorf("stdout:\n%s\nwant last line %s", out, tt.line)
			}
			if !strings.Contains(out, "ANTHROPIC_API_KEY") {
				t.Errorf("no word on the key:\n%s", out)
			}
		})
	}
	if _, errOut, code := runSetup(t, env, "claude", "--shell", "tcsh"); code != ExitUsage || !strings.Contains(errOut, "sh, fish, powershell") {
		t.Errorf("bad shell: exit %d: %s", code, errOut)
	}
}

func TestClientAddr(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"127.0.0.1:8787": "127.0.0.1:8787",
		"0.0.0.0:8787":   "127.0.0.1:8787",
		":8787":          "127.0.0.1:8787",
		"[::]:8787":      "[::1]:8787",
		"[::1]:8787":     "[::1]:8787",
		"localhost:9":    "localhost:9",
	} {
		if got := clientAddr(in); got != want {
			t.Errorf("clientAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// setup gemini merges API-key auth and one attempt into Gemini CLI's
// settings (the old file kept), and prints the environment for eval.
func TestSetupGemini(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := filepath.Join(home, ".gemini")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"ui":{"theme":"Dracula"}}`), 0o600)
	out, errOut, code := run(t, map[string]string{"HOME": home}, "", "setup", "gemini", "--shell", "sh")
	if code != 0 || !strings.Contains(out, "export GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8787\n") || !strings.Contains(errOut, "old file kept as") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "settings.json"))
	if want := `{"ui":{"theme":"Dracula"},"general":{"maxAttempts":1},"security":{"auth":{"selectedType":"gemini-api-key"}}}`; string(b) != want {
		t.Fatalf("settings:\n%s\nwant:\n%s", b, want)
	}
	if backups, _ := filepath.Glob(filepath.Join(dir, "settings.json.spillway-backup-*")); len(backups) != 1 {
		t.Fatalf("backups %v", backups)
	}
	// again: nothing changes, no second backup
	run(t, map[string]string{"HOME": home}, "", "setup", "gemini")
	if backups, _ := filepath.Glob(filepath.Join(dir, "settings.json.spillway-backup-*")); len(backups) != 1 {
		t.Fatalf("a second run made another backup: %v", backups)
	}
	// a file Gemini CLI cannot read (a trailing comma): said, nothing
	// written, no environment printed
	bad := "{\n  \"ui\": {\"theme\": \"Dracula\",}\n}\n"
	os.WriteFile(filepath.Join(dir, "settings.json"), []byte(bad), 0o600)
	out, errOut, code = run(t, map[string]string{"HOME": home}, "", "setup", "gemini", "--shell", "sh")
	want := "spillway: " + filepath.Join(dir, "settings.json") + ": Gemini CLI cannot start with this file as it is: line 2, column 28: a trailing comma before '}' (Gemini CLI reads comments, not trailing commas); fix that and run spillway setup gemini again (nothing was changed)\n"
	if code != ExitFail || out != "" || errOut != want {
		t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant   %q", code, out, errOut, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "settings.json")); string(b) != bad {
		t.Fatalf("the file changed:\n%s", b)
	}
}

// setup service writes the user unit that runs this configuration, and
// says how to enable it; --print writes nothing.
func TestSetupService(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := filepath.Join(home, "spillway.yaml")
	os.WriteFile(cfg, []byte("listen: 127.0.0.1:8787\n"), 0o600)
	env := map[string]string{"HOME": home}
	out, errs, code := run(t, env, "", "setup", "service", "--config", cfg, "--os", "linux", "--binary", "/opt/spillway/bin/spillway", "--print")
	if code != 0 || !strings.Contains(out, "ExecStart=/opt/spillway/bin/spillway serve --config "+cfg) {
		t.Fatalf("--print: exit %d %s %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(home, ".config", "systemd", "user", "spillway.service")); err == nil {
		t.Fatal("--print wrote the unit")
	}
	out, _, code = run(t, env, "", "setup", "service", "--config", cfg, "--os", "darwin", "--binary", "/opt/spillway/bin/spillway")
	plist := filepath.Join(home, "Library", "LaunchAgents", "dev.spillway.serve.plist")
	b, err := os.ReadFile(plist)
	if code != 0 || err != nil || !strings.Contains(string(b), "<string>"+cfg+"</string>") || !strings.Contains(out, "launchctl bootstrap") {
		t.Fatalf("darwin: exit %d %v\n%s\n%s", code, err, out, b)
	}
	// a bad --os is a bad flag value: exit 2, as the exit codes table says (docs/commands.md)
	for _, goos := range []string{"windows", "plan9"} {
		want := `spillway: --os "` + goos + `": give linux (a systemd user unit) or darwin (a launchd agent); on another system, run spillway serve under your own supervisor` + "\n"
		if _, errs, code = run(t, env, "", "setup", "service", "--os", goos, "--binary", "/x"); code != ExitUsage || errs != want {
			t.Fatalf("%s: exit %d\n%q\nwant %q", goos, code, errs, want)
		}
	}
}

// A Codex signed in with ChatGPT: plain setup says to use --chatgpt (from
// auth.json's mode alone), and --chatgpt writes the plan's provider; the
// sign-in is then never switched silently: plain setup keeps it and says
// how to switch, --api-key switches. --chatgpt without a ChatGPT sign-in
// is refused unless --force.
func TestSetupCodexChatGPT(t *testing.T) {
	t.Parallel()
	env, codexHome := setupEnv(t)
	os.MkdirAll(codexHome, 0o700)
	auth := filepath.Join(codexHome, "auth.json")
	os.WriteFile(auth, []byte(`{"auth_mode":"chatgpt","OPENAI_API_KEY":null,"tokens":{"access_token":"a.b.c"}}`), 0o600)
	config := filepath.Join(codexHome, "config.toml")
	os.WriteFile(config, []byte("model = \"gpt-6-astra\"\n"), 0o600)
	_, errOut, code := run(t, env, "", "setup", "codex", "--print")
	if code != 0 || strings.Contains(errOut, "ChatGPT") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	out, errOut, code := run(t, env, "", "setup", "codex", "--chatgpt")
	got := readTestFile(t, config)
	if code != 0 || !strings.Contains(out, "http://127.0.0.1:8787/backend-api/codex") || !strings.Contains(got, "requires_openai_auth = true") || strings.Contains(got, "env_key") || errOut != "" {
		t.Fatalf("exit %d\n%s\n%s\n%s", code, out, errOut, got)
	}

	// plain: kept, and said first
	out, errOut, code = run(t, env, "", "setup", "codex")
	want := config + " is set up for Codex's ChatGPT sign-in (requires_openai_auth = true): kept. To send an API key ($OPENAI_API_KEY) instead: spillway setup codex --api-key\n" +
		config + " already routes Codex through spillway at http://127.0.0.1:8787/backend-api/codex; nothing changed\nstart the gateway with: spillway serve\n"
	if code != 0 || out != want || errOut != "" || readTestFile(t, config) != got {
		t.Fatalf("plain setup codex on a ChatGPT setup: exit %d\nstdout %q\nwant   %q\nstderr %q", code, out, want, errOut)
	}
	// --api-key switches
	out, errOut, code = run(t, env, "", "setup", "codex", "--api-key")
	wantErr := "note: Codex is signed in with ChatGPT (" + auth + "): this provider sends $OPENAI_API_KEY, not that sign-in; to use your plan through spillway, run: spillway setup codex --chatgpt\n"
	if now := readTestFile(t, config); code != 0 || !strings.HasPrefix(out, "updated "+config) || errOut != wantErr || !strings.Contains(now, `env_key = "OPENAI_API_KEY"`) || strings.Contains(now, "requires_openai_auth") {
		t.Fatalf("--api-key: exit %d\nstdout %s\nstderr %q\nwant   %q\n%s", code, out, errOut, wantErr, now)
	}

	// --chatgpt without a ChatGPT sign-in: refused, nothing written
	for _, c := range []struct{ name, auth, why string }{
		{"no auth.json", "", "there is no AUTH (Codex is not signed in)"},
		{"an API key", `{"OPENAI_API_KEY":"sk-abc"}`, "AUTH holds an API key, not a ChatGPT sign-in"},
		{"an unknown mode", `{"auth_mode":"agent"}`, "AUTH does not hold a ChatGPT sign-in"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, codexHome := setupEnv(t)
			os.MkdirAll(codexHome, 0o700)
			auth := filepath.Join(codexHome, "auth.json")
			if c.auth != "" {
				os.WriteFile(auth, []byte(c.auth), 0o600)
			}
			out, errOut, code := run(t, env, "", "setup", "codex", "--chatgpt")
			want := "spillway: --chatgpt: " + strings.ReplaceAll(c.why, "AUTH", auth) + ", so Codex would have no sign-in to send through the gateway; sign in with ChatGPT first (codex login), or give --force to write it anyway (with an API key: spillway setup codex --api-key)\n"
			if code != ExitFail || out != "" || errOut != want {
				t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant   %q", code, out, errOut, want)
			}
			if _, err := os.Stat(filepath.Join(codexHome, "config.toml")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("config.toml written: %v", err)
			}
			out, errOut, code = run(t, env, "", "setup", "codex", "--chatgpt", "--force")
			want = "note: " + auth + " does not hold a ChatGPT sign-in; run codex login first (with an API key, run: spillway setup codex --api-key)\n"
			if code != 0 || errOut != want || !strings.Contains(readTestFile(t, filepath.Join(codexHome, "config.toml")), "requires_openai_auth = true") {
				t.Fatalf("--force: exit %d\nstdout %s\nstderr %q\nwant   %q", code, out, errOut, want)
			}
		})
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--chatgpt", "--api-key"}, "spillway: --chatgpt and --api-key: give one (--chatgpt: Codex sends its ChatGPT sign-in; --api-key: it sends $OPENAI_API_KEY)\n"},
		{[]string{"--force"}, "spillway: --force goes with --chatgpt (it writes the ChatGPT setup although auth.json holds no ChatGPT sign-in)\n"},
	} {
		if _, errOut, code := run(t, env, "", append([]string{"setup", "codex"}, c.args...)...); code != ExitUsage || errOut != c.want {
			t.Errorf("%v: exit %d\nstderr %q\nwant   %q", c.args, code, errOut, c.want)
		}
	}

	// Google-signed Gemini CLI: only the one attempt, its sign-in kept
	home := t.TempDir()
	dir := filepath.Join(home, ".gemini")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"security":{"auth":{"selectedType":"oauth-personal"}}}`), 0o600)
	out, errOut, code = run(t, map[string]string{"HOME": home}, "", "setup", "gemini", "--google", "--shell", "sh")
	b, _ := os.ReadFile(filepath.Join(dir, "settings.json"))
	if code != 0 || !strings.Contains(out, "export CODE_ASSIST_ENDPOINT=http://127.0.0.1:8787\n") || string(b) != `{"security":{"auth":{"selectedType":"oauth-personal"}},"general":{"maxAttempts":1}}` {
		t.Fatalf("exit %d\n%s\n%s\n%s", code, out, errOut, b)
	}
}

// The texts that name the agents name all three: spillway --help, setup
// --help and the file init writes.
func TestTextsNameGeminiCLI(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	root, _, _ := run(t, env, "", "--help")
	setupHelp, _, _ := run(t, env, "", "setup", "--help")
	path := filepath.Join(home, "spillway.yaml")
	if _, errs, code := run(t, env, "", "init", path); code != 0 {
		t.Fatalf("init: exit %d %s", code, errs)
	}
	starter := readTestFile(t, path)
	for _, c := range []struct{ name, text, want string }{
		{"spillway --help", root, "Start with 'spillway serve' and 'spillway setup codex|claude|gemini' (a gateway\nfor Codex CLI, Claude Code and Gemini CLI,"},
		{"setup --help", setupHelp, "setup <agent> points one agent at the gateway: Codex CLI, Claude Code, Gemini CLI,\nOpenCode, GitHub Copilot CLI, Qwen Code, Cline or Continue's cn"},
		{"init's file, keys", starter, "# auth: passthrough sends the client's own key (Codex CLI's, Claude Code's,\n# Gemini CLI's); auth: key replaces it with api_key."},
		{"init's file, catalogs", starter, "# The Codex CLI, Claude Code and Gemini CLI catalogs are built in; add or\n# override here.\n"},
		{"init's file, the Gemini chain", starter, "  gemini: [gemini-3-pro, gemini-3-flash, gemini-3-flash-lite]\n"},
	} {
		if !strings.Contains(c.text, c.want) || strings.Contains(c.text, "Codex CLI or Claude Code") || strings.Contains(c.text, "Codex CLI and Claude Code catalogs") {
			t.Errorf("%s:\n%s\nwant it to hold:\n%s", c.name, c.text, c.want)
		}
	}
}

// setup claude --bedrock / --vertex print Claude Code's cloud mode for the
// gateway, keeping the user's region and project; a gateway with
// gateway.keys needs $SPILLWAY_KEY; both modes at once is a usage error.
func TestSetupClaudeCloud(t *testing.T) {
	t.Parallel()
	env, _ := setupEnv(t)
	with := func(kv ...string) map[string]string {
		e := map[string]string{"HOME": env["HOME"]}
		for i := 0; i+1 < len(kv); i += 2 {
			e[kv[i]] = kv[i+1]
		}
		return e
	}
	keyed := withConfig(t, with(), "gateway:\n  keys:\n    - name: alice\n      key: sha256:1bd8fd47297046f993e608e398d5905b00a33e163c6b1172dd38887fed05ed6a\n")
	keyedWithKey := withConfig(t, with("SPILLWAY_KEY", "sk-gw-alice"), "listen: 127.0.0.1:9787\ngateway:\n  keys:\n    - name: alice\n      key: sha256:1bd8fd47297046f993e608e398d5905b00a33e163c6b1172dd38887fed05ed6a\n")
	tests := []struct {
		name      string
		env       map[string]string
		args      []string
		lines     []string // each a whole line of stdout
		notInOut  []string
		code      int
		errSubstr string
	}{
		{"bedrock", env, []string{"claude", "--bedrock", "--shell", "sh"},
			[]string{"export CLAUDE_CODE_USE_BEDROCK=1", "export ANTHROPIC_BEDROCK_BASE_URL=http://127.0.0.1:8787/bedrock",
				"export AWS_REGION=us-east-1", "export CLAUDE_CODE_SKIP_BEDROCK_AUTH=1"},
			[]string{"AWS_BEARER_TOKEN_BEDROCK", "export ANTHROPIC_BASE_URL"}, 0, ""},
		{"bedrock keeps AWS_REGION", with("AWS_REGION", "eu-west-3"), []string{"claude", "--bedrock", "--shell", "fish"},
			[]string{"set -gx AWS_REGION eu-west-3", "set -gx ANTHROPIC_BEDROCK_BASE_URL http://127.0.0.1:8787/bedrock"}, nil, 0, ""},
		{"bedrock with a key, --url", with("SPILLWAY_KEY", "sk-gw-bob"), []string{"claude", "--bedrock", "--shell", "powershell", "--url", "https://gw.example/v1"},
			[]string{`$env:ANTHROPIC_BEDROCK_BASE_URL = "https://gw.example/bedrock"`, `$env:AWS_BEARER_TOKEN_BEDROCK = "sk-gw-bob"`},
			[]string{`$env:CLAUDE_CODE_SKIP_BEDROCK_AUTH`}, 0, ""},
		{"vertex", env, []string{"claude", "--vertex", "--shell", "sh"},
			[]string{"export CLAUDE_CODE_USE_VERTEX=1", "export ANTHROPIC_VERTEX_BASE_URL=http://127.0.0.1:8787/vertex/v1",
				"export ANTHROPIC_VERTEX_PROJECT_ID=spillway", "export CLOUD_ML_REGION=us-east5", "export CLAUDE_CODE_SKIP_VERTEX_AUTH=1"},
			[]string{"ANTHROPIC_CUSTOM_HEADERS="}, 0, ""},
		{"vertex keeps project and region", with("ANTHROPIC_VERTEX_PROJECT_ID", "my-proj", "CLOUD_ML_REGION", "europe-west1"), []string{"claude", "--vertex", "--shell", "sh"},
			[]string{"export ANTHROPIC_VERTEX_PROJECT_ID=my-proj", "export CLOUD_ML_REGION=europe-west1"}, nil, 0, ""},
		{"vertex on a keyed gateway with $SPILLWAY_KEY", keyedWithKey, []string{"claude", "--vertex", "--shell", "sh"},
			[]string{"export ANTHROPIC_VERTEX_BASE_URL=http://127.0.0.1:9787/vertex/v1", "export ANTHROPIC_CUSTOM_HEADERS='Authorization: Bearer sk-gw-alice'"}, nil, 0, ""},
		{"keyed gateway without $SPILLWAY_KEY", keyed, []string{"claude", "--bedrock"}, nil, nil, ExitUsage, "put your gateway key in SPILLWAY_KEY"},
		{"both modes", env, []string{"claude", "--bedrock", "--vertex"}, nil, nil, ExitUsage, "--bedrock and --vertex: give one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runSetup(t, tt.env, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.errSubstr) {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, errOut)
			}
			if tt.code != 0 {
				if out != "" {
					t.Errorf("stdout on refusal (eval would run it):\n%s", out)
				}
				return
			}
			for _, l := range tt.lines {
				if !strings.Contains("\n"+out, "\n"+l+"\n") {
					t.Errorf("no line %s in:\n%s", l, out)
				}
			}
			for _, s := range tt.notInOut {
				if strings.Contains(out, s) {
					t.Errorf("%q in:\n%s", s, out)
				}
			}
		})
	}
}

// setup claude --bedrock / --vertex say on stderr (stdout stays the
// environment) when no step of the configuration could answer a client
// that sends no Anthropic key: every Claude deployment's provider takes the
// caller's key.
func TestSetupClaudeCloudNote(t *testing.T) {
	t.Parallel()
	env, _ := setupEnv(t)
	tests := []struct {
		name string
		yaml string // "" for no file: the defaults
		args []string
		note bool
	}{
		{"defaults without ANTHROPIC_API_KEY: no key of the provider's own", "", []string{"claude", "--bedrock"}, true},
		{"an api_key under passthrough", "providers:\n  anthropic: { api_key: sk-ant-own, auth: passthrough }\n", []string{"claude", "--vertex"}, false},
		{"auth: key", "providers:\n  anthropic: { api_key: sk-ant-own, auth: key }\n", []string{"claude", "--bedrock"}, false},
		{"a Bedrock deployment", "providers:\n  bedrock-east: { type: bedrock, region: us-east-1 }\nmodels:\n  claude-sonnet-5-5:\n    deployments:\n      - { name: bedrock, provider: bedrock-east, upstream: us.anthropic.claude-sonnet-5-5-v1:0 }\n",
			[]string{"claude", "--vertex"}, false},
		{"--url: the configuration is not read", "", []string{"claude", "--bedrock", "--url", "http://127.0.0.1:9000"}, false},
		{"plain setup claude: no note", "", []string{"claude"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := env
			if tt.yaml != "" {
				e = withConfig(t, env, tt.yaml)
			}
			out, errOut, code := runSetup(t, e, append(tt.args, "--shell", "sh")...)
			if code != 0 || !strings.Contains(out, "export ") {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			if got := strings.Contains(errOut, "note: no Claude model"); got != tt.note {
				t.Errorf("note %v, want %v: stderr %q", got, tt.note, errOut)
			}
			if strings.Contains(out, "note:") {
				t.Errorf("the note went to stdout (eval would run it):\n%s", out)
			}
		})
	}
}
