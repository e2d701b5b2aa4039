package cli

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readmeExample is one "$ command" line of a ```sh block of the README, with
// the output lines shown under it.
type readmeExample struct {
	line     int
	command  string
	exitCode int
	output   []string
}

var exitsRe = regexp.MustCompile(`\s+#\s*exits\s+(\d+)\s*$`)

func readmeExamples(t *testing.T, path string) []readmeExample {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []readmeExample
	inSh := false
	cur := -1 // index of the example output lines attach to, within one block
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			inSh = line == "```sh"
			cur = -1
		case inSh && strings.HasPrefix(line, "$ "):
			ex := readmeExample{line: n, command: strings.TrimPrefix(line, "$ ")}
			if m := exitsRe.FindStringSubmatch(ex.command); m != nil {
				ex.exitCode, _ = strconv.Atoi(m[1])
				ex.command = ex.command[:len(ex.command)-len(m[0])]
			}
			out = append(out, ex)
			cur = len(out) - 1
		case inSh && cur >= 0 && strings.TrimSpace(line) != "":
			out[cur].output = append(out[cur].output, strings.TrimSpace(line))
		}
	}
	return out
}

// TestReadmeExamples runs every "$ …" example of the README with a freshly
// built spillway, from the repository root with an empty HOME, and checks the
// exit status and that each output line shown appears in what it printed.
func TestReadmeExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	root, _ := filepath.Abs("../..")
	bin := filepath.Dir(buildSpillway(t))
	examples := readmeExamples(t, filepath.Join(root, "README.md"))
	if len(examples) < 8 {
		t.Fatalf("found only %d README examples", len(examples))
	}
	home := t.TempDir()
	// Examples that talk to a simulator on 127.0.0.1:8790 get one started
	// for them (calm scenario) on a free port.
	// Examples that talk to a gateway on 127.0.0.1:8787 get one in front of
	// that simulator.
	simAddr, gwAddr := "", ""
	for _, ex := range examples {
		if (strings.Contains(ex.command, "127.0.0.1:8790") || strings.Contains(ex.command, "127.0.0.1:8787")) && simAddr == "" {
			simAddr = startReadmeSim(t, filepath.Join(bin, "spillway"))
		}
		if strings.Contains(ex.command, "127.0.0.1:8787") && gwAddr == "" {
			gwAddr = startReadmeGateway(t, filepath.Join(bin, "spillway"), simAddr)
		}
	}
	for _, ex := range examples {
		if simAddr != "" {
			ex.command = strings.ReplaceAll(ex.command, "127.0.0.1:8790", simAddr)
		}
		if gwAddr != "" {
			ex.command = strings.ReplaceAll(ex.command, "127.0.0.1:8787", gwAddr)
		}
		t.Run("README.md:"+strconv.Itoa(ex.line), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", ex.command)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "HOME="+home, "PATH="+bin+":"+os.Getenv("PATH"), "XDG_CONFIG_HOME=", "SPILLWAY_CONFIG=")
			got, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != ex.exitCode {
				t.Fatalf("%s\nexit %d, README says %d\n%s", ex.command, code, ex.exitCode, got)
			}
			// compared with runs of blanks as one: a table's columns are as
			// wide as the addresses of this run make them
			norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
			text := norm(strings.ReplaceAll(string(got), home, "~"))
			for _, want := range ex.output {
				if !strings.Contains(text, norm(want)) {
					t.Errorf("%s\noutput lacks the README's line %q; got:\n%s", ex.command, want, text)
				}
			}
		})
	}
}

// startReadmeSim runs `spillway sim` on a free port and returns its address.
func startReadmeSim(t *testing.T, bin string) string {
	t.Helper()
	return startReadmeServer(t, bin, "sim", "--listen", "127.0.0.1:0")
}

// startReadmeGateway runs `spillway serve` in front of the simulator.
func startReadmeGateway(t *testing.T, bin, simAddr string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "spillway.yaml")
	body := "providers:\n  openai: { base_url: \"http://" + simAddr + "/v1\" }\n  anthropic: { base_url: \"http://" + simAddr + "\" }\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return startReadmeServer(t, bin, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--events", "-")
}

// startReadmeServer runs a spillway server command and returns the address
// its banner names.
func startReadmeServer(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatalf("sim banner: %v", err)
	}
	m := regexp.MustCompile(`listening on http://(\S+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("sim banner: %q", line)
	}
	return m[1]
}

// buildSpillway builds the binary from this checkout into a temporary
// directory and returns its path.
func buildSpillway(t *testing.T) string {
	t.Helper()
	root, _ := filepath.Abs("../..")
	bin := filepath.Join(t.TempDir(), "spillway")
	build := exec.Command("go", "build", "-o", bin, "./cmd/spillway")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}
