package cli

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spillway/spillway/config"
)

// docPages are the repository's documents that show spillway at work, the
// README and every page of docs/, by their paths from the repository root.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, p := range pages {
		rel, _ := filepath.Rel(root, p)
		out = append(out, filepath.ToSlash(rel))
	}
	if len(out) < 10 {
		t.Fatalf("found only %d documents: is docs/ where it was?", len(out))
	}
	return out
}

// docsText is the README and every page of docs/, one after another (each
// page starts on a line of its own).
func docsText(t *testing.T, root string) string {
	t.Helper()
	var all strings.Builder
	for _, p := range docPages(t, root) {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
		all.WriteString("\n")
	}
	return all.String()
}

// readmeExample is one "$ command" line of a ```sh block of the README or a
// page of docs/, with the output lines shown under it.
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
		line := strings.TrimSpace(sc.Text()) // (a block may be indented in a list)
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

// TestReadmeExamples runs every "$ …" example of the README and of every page
// of docs/ with a freshly built spillway, from the repository root, each
// page's in order with an empty HOME of their own, and checks the exit status
// and that each output line shown appears in what it printed.
func TestReadmeExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	root, _ := filepath.Abs("../..")
	bin := filepath.Dir(buildSpillway(t))
	total := 0
	for _, page := range docPages(t, root) {
		examples := readmeExamples(t, filepath.Join(root, page))
		if page == "README.md" && len(examples) < 8 {
			t.Fatalf("found only %d README examples", len(examples))
		}
		total += len(examples)
		if len(examples) > 0 {
			t.Run(page, func(t *testing.T) { runExamples(t, root, bin, page, examples) })
		}
	}
	if total < 60 {
		t.Fatalf("found only %d examples in the README and docs/", total)
	}
}

// runExamples runs one page's examples in order, with a HOME of their own and
// a simulator and a gateway of their own where they talk to one.
func runExamples(t *testing.T, root, bin, page string, examples []readmeExample) {
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
		t.Run(strconv.Itoa(ex.line), func(t *testing.T) {
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
				t.Fatalf("%s:%d: %s\nexit %d, the page says %d\n%s", page, ex.line, ex.command, code, ex.exitCode, got)
			}
			// each line the page shows is a whole line of the output,
			// compared with runs of blanks as one (a table's columns are as
			// wide as the addresses of this run make them); a "…" in it
			// stands for what the page leaves out of that line
			norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
			var lines []string
			for _, l := range strings.Split(strings.ReplaceAll(string(got), home, "~"), "\n") {
				lines = append(lines, norm(l))
			}
			for _, want := range ex.output {
				if !slices.ContainsFunc(lines, func(l string) bool { return lineMatches(l, norm(want)) }) {
					t.Errorf("%s:%d: %s\noutput lacks the page's line %q; got:\n%s", page, ex.line, ex.command, want, got)
				}
			}
		})
	}
}

// lineMatches reports whether line is want, or holds want's parts in
// order where want elides with "…" (at its start, between parts, at its end).
func lineMatches(line, want string) bool {
	if !strings.Contains(want, "…") {
		return line == want
	}
	parts := strings.Split(want, "…")
	if !strings.HasPrefix(line, strings.TrimSpace(parts[0])) || !strings.HasSuffix(line, strings.TrimSpace(parts[len(parts)-1])) {
		return false
	}
	for _, p := range parts {
		i := strings.Index(line, strings.TrimSpace(p))
		if i < 0 {
			return false
		}
		line = line[i+len(strings.TrimSpace(p)):]
	}
	return true
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

// The README's fuzz list is every fuzz function of the repository, each
// with its package, and nothing else.
func TestReadmeFuzzList(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`go test (\\./\\S+) -fuzz (Fuzz\\w+)`").FindAllStringSubmatch(string(readme), -1) {
		listed[m[1]+" "+m[2]] = true
	}
	found := map[string]bool{}
	fuzz := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && p != "../..") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, m := range fuzz.FindAllStringSubmatch(string(b), -1) {
			found["./"+filepath.ToSlash(filepath.Dir(strings.TrimPrefix(p, "../../")))+" "+m[1]] = true
		}
		return nil
	})
	for k := range found {
		if !listed[k] {
			t.Errorf("the README's fuzz list lacks `go test %s`", strings.Replace(k, " ", " -fuzz ", 1))
		}
	}
	for k := range listed {
		if !found[k] {
			t.Errorf("the README lists `go test %s`, which is no fuzz function", strings.Replace(k, " ", " -fuzz ", 1))
		}
	}
	if len(found) < 10 {
		t.Fatalf("found only %d fuzz functions: the walk is wrong", len(found))
	}
}

// Each synopsis of the README and docs/ (a ``` block of `spillway COMMAND
// [--flag …]` lines) names the command's flags, all of them, and no flag it
// lacks; every command with flags of its own has one.
func TestReadmeSynopses(t *testing.T) {
	root, _ := filepath.Abs("../..")
	readme := docsText(t, root)
	block := regexp.MustCompile("(?m)^ *```\\n( *spillway [^`]*?)```") // (indented in a list too)
	flag := regexp.MustCompile(`(?:^|[\s\[|(])--([a-z][a-z0-9-]*)`)
	app := (&App{Getenv: func(string) string { return "" }}).rootCmd()
	checked := 0
	documented := map[*cobra.Command]bool{}
	for _, b := range block.FindAllStringSubmatch(readme, -1) {
		// a synopsis may run over several lines; a new "spillway" line is
		// another command's
		var synopses []string
		for _, line := range strings.Split(b[1], "\n") {
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "spillway "):
				synopses = append(synopses, line)
			case strings.TrimSpace(line) != "" && len(synopses) > 0:
				synopses[len(synopses)-1] += " " + line
			}
		}
		for _, syn := range synopses {
			syn, _, _ = strings.Cut(syn, "#") // a comment
			if !strings.Contains(syn, "[") {
				continue // an example, not a synopsis
			}
			words := strings.Fields(syn)[1:]
			var path []string
			for _, w := range words {
				if !regexp.MustCompile(`^[a-z]+$`).MatchString(w) {
					break
				}
				path = append(path, w)
			}
			cmd, _, err := app.Find(path)
			if err != nil || cmd == app || !cmd.Runnable() {
				continue // a group's synopsis (queue … add|ls|…) or not a command
			}
			if cmd.HasSubCommands() {
				continue
			}
			checked++
			documented[cmd] = true
			named := map[string]bool{}
			for _, m := range regexp.MustCompile(`[\s\[]-([a-zA-Z])[\s\]]`).FindAllStringSubmatch(syn, -1) {
				if f := cmd.Flags().ShorthandLookup(m[1]); f != nil {
					named[f.Name] = true
				}
			}
			for _, m := range flag.FindAllStringSubmatch(syn, -1) {
				named[m[1]] = true
				if cmd.Flags().Lookup(m[1]) == nil {
					t.Errorf("the synopsis of %q names --%s, which it does not have", cmd.CommandPath(), m[1])
				}
			}
			cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden && f.Name != "help" && !named[f.Name] {
					t.Errorf("the synopsis of %q leaves out --%s", cmd.CommandPath(), f.Name)
				}
			})
		}
	}
	if checked < 8 {
		t.Fatalf("only %d synopses checked: the documents' form changed?", checked)
	}
	// every command a user runs with flags of its own has its synopsis
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			walk(sub)
		}
		if c == app || !c.Runnable() || c.HasSubCommands() || documented[c] {
			return
		}
		own := false
		c.LocalFlags().VisitAll(func(f *pflag.Flag) { own = own || !f.Hidden && f.Name != "help" })
		if own {
			t.Errorf("%q has flags of its own but no synopsis in the README or docs/", c.CommandPath())
		}
	}
	walk(app)
}

// yamlPaths are the field paths a YAML document writes, entries of a
// map collapsed to "*" where into says the map is one of names (providers,
// models, chains, deployments' lists as []).
func yamlPaths(v any, t reflect.Type, path string, out map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if path != "" {
		out[path] = true
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		fields := map[string]reflect.StructField{}
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			fields[name] = t.Field(i)
		}
		for k, sub := range m {
			f, ok := fields[k]
			if !ok {
				out[path+"."+k+"?"] = true
				continue
			}
			yamlPaths(sub, f.Type, strings.TrimPrefix(path+"."+k, "."), out)
		}
	case reflect.Map:
		if m, ok := v.(map[string]any); ok {
			for _, sub := range m {
				yamlPaths(sub, t.Elem(), path+".*", out)
			}
		}
	case reflect.Slice:
		if l, ok := v.([]any); ok {
			for _, sub := range l {
				yamlPaths(sub, t.Elem(), path+"[]", out)
			}
		}
	}
}

// typePaths are every field path of t, as yamlPaths names them.
func typePaths(t reflect.Type, path string, out map[string]bool, depth int) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if path != "" {
		out[path] = true
	}
	if depth > 4 {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if t == reflect.TypeOf(config.Secret{}) || t == reflect.TypeOf(time.Time{}) {
			return
		}
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name == "" || name == "-" || !t.Field(i).IsExported() {
				continue
			}
			typePaths(t.Field(i).Type, strings.TrimPrefix(path+"."+name, "."), out, depth+1)
		}
	case reflect.Map:
		typePaths(t.Elem(), path+".*", out, depth+1)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct || t.Elem().Kind() == reflect.Pointer {
			typePaths(t.Elem(), path+"[]", out, depth+1)
		}
	}
}

// The file-format block of the docs (docs/configuration.md) is a
// configuration config check takes, with every field of the file, and every
// field `spillway init` writes.
func TestReadmeFileFormat(t *testing.T) {
	root, _ := filepath.Abs("../..")
	readme := docsText(t, root)
	_, rest, ok := strings.Cut(readme, "The file format, with every field")
	if !ok {
		t.Fatal("neither the README nor docs/ has the file-format block")
	}
	_, rest, _ = strings.Cut(rest, "```yaml\n")
	block, _, _ := strings.Cut(rest, "```")
	if _, err := config.Parse("the documented file format", []byte(block), func(string) string { return "set" }); err != nil {
		t.Fatalf("config check refuses the documented file format:\n%v", err)
	}
	paths := func(src []byte) map[string]bool {
		var v any
		if err := yaml.Unmarshal(src, &v); err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		yamlPaths(v, reflect.TypeOf(config.Config{}), "", out)
		return out
	}
	shown, written := paths([]byte(block)), paths(config.Starter)
	all := map[string]bool{}
	typePaths(reflect.TypeOf(config.Config{}), "", all, 0)
	// read from files written before timeouts: had a section, moved there
	delete(all, "gateway.first_token_timeout")
	delete(all, "gateway.idle_timeout")
	for p := range all {
		if !shown[p] {
			t.Errorf("the documented file format leaves out %s", p)
		}
	}
	for p := range written {
		if !shown[p] {
			t.Errorf("spillway init writes %s, which the documented file format leaves out", p)
		}
	}
}
