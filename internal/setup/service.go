package setup

import (
	"errors"
	"fmt"
	"html"
	"path/filepath"
	"strings"
	"time"
)

// Service describes the gateway as a user service: a systemd user unit on
// Linux, a launchd agent on macOS. Keys are never written into it: the
// unit reads them from an environment file the user keeps (systemd), and
// launchd inherits none, so the plist names where to add them.
type Service struct {
	Binary string   // absolute path of spillway
	Args   []string // after "serve": --config PATH, --listen ADDR, …
	Home   string   // the user's home (paths in the files)
}

// ServiceLabel is the launchd label and the systemd unit's name.
const ServiceLabel = "dev.spillway.serve"

// SystemdPath is where the user unit goes.
func (s Service) SystemdPath() string {
	return filepath.Join(s.Home, ".config", "systemd", "user", "spillway.service")
}

// LaunchdPath is where the launch agent goes.
func (s Service) LaunchdPath() string {
	return filepath.Join(s.Home, "Library", "LaunchAgents", ServiceLabel+".plist")
}

// EnvFile is the file the systemd unit reads keys from (optional; it is
// not created).
func (s Service) EnvFile() string { return filepath.Join(s.Home, ".config", "spillway", "env") }

// Systemd is the text of the user unit; systemctl reload sends SIGHUP,
// which reloads the configuration and keeps the breakers' state.
func (s Service) Systemd() string {
	var b strings.Builder
	b.WriteString("# Written by spillway setup service. Keys: put OPENAI_API_KEY=… lines in the\n")
	fmt.Fprintf(&b, "# environment file below (mode 600); they never go into this unit.\n")
	b.WriteString("[Unit]\nDescription=spillway gateway (capacity-aware LLM proxy)\nAfter=network-online.target\nWants=network-online.target\n\n")
	b.WriteString("[Service]\nType=simple\n")
	fmt.Fprintf(&b, "ExecStart=%s\n", systemdQuote(append([]string{s.Binary, "serve"}, s.Args...)))
	b.WriteString("ExecReload=/bin/kill -HUP $MAINPID\n")
	fmt.Fprintf(&b, "EnvironmentFile=-%s\n", s.EnvFile())
	b.WriteString("Restart=on-failure\nRestartSec=2\n\n[Install]\nWantedBy=default.target\n")
	return b.String()
}

// systemdQuote joins args for ExecStart, quoting those with blanks.
func systemdQuote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \t\"\\") {
			a = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(a) + `"`
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// Launchd is the text of the launch agent (a property list).
func (s Service) Launchd() string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by spillway setup service. Keys are not written here: with
     auth: passthrough (the default) the agents send their own; for auth: key,
     add an EnvironmentVariables dictionary with them yourself. -->
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>` + ServiceLabel + `</string>
  <key>ProgramArguments</key>
  <array>
`)
	for _, a := range append([]string{s.Binary, "serve"}, s.Args...) {
		fmt.Fprintf(&b, "    <string>%s</string>\n", html.EscapeString(a))
	}
	logs := filepath.Join(s.Home, "Library", "Logs", "spillway.log")
	fmt.Fprintf(&b, `  </array>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>StandardErrorPath</key>
  <string>%s</string>
  <key>StandardOutPath</key>
  <string>%s</string>
</dict>
</plist>
`, html.EscapeString(logs), html.EscapeString(logs))
	return b.String()
}

// ServiceFor picks the unit for goos: its path, its text, and the commands
// that enable it.
func (s Service) For(goos string) (path, text string, enable []string, err error) {
	if s.Binary == "" || !filepath.IsAbs(s.Binary) {
		return "", "", nil, fmt.Errorf("the spillway binary's path must be absolute (got %q)", s.Binary)
	}
	if s.Home == "" {
		return "", "", nil, errors.New("no home directory: set HOME")
	}
	switch goos {
	case "linux":
		return s.SystemdPath(), s.Systemd(), []string{
			"systemctl --user daemon-reload",
			"systemctl --user enable --now spillway",
			"loginctl enable-linger \"$USER\"   # to keep it running when you are logged out",
			"journalctl --user -u spillway -f   # its log",
		}, nil
	case "darwin":
		return s.LaunchdPath(), s.Launchd(), []string{
			"launchctl bootstrap gui/$(id -u) " + s.LaunchdPath(),
			"launchctl kickstart -k gui/$(id -u)/" + ServiceLabel,
			"tail -f " + filepath.Join(s.Home, "Library", "Logs", "spillway.log") + "   # its log",
		}, nil
	}
	return "", "", nil, fmt.Errorf("no service for %s: systemd (linux) and launchd (darwin) are supported; run spillway serve under your own supervisor", goos)
}

// WriteService writes the unit (a changed one with a backup of the old
// beside it) and returns its path and the backup ("" for none).
func WriteService(path, text string, now time.Time) (string, string, error) {
	return writeMerged(filepath.Dir(path), filepath.Base(path), now, func([]byte) ([]byte, error) { return []byte(text), nil })
}
