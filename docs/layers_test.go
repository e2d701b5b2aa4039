package docs

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// maxLevels bounds how deep the module's imports go, folder by folder (a
// folder of internal/ or a top-level one is one piece with the packages
// under it: internal/format and its format folders, policy and
// policytest): a folder that imports no other is level 1, another one more
// than the deepest it imports. Issue 47 brought it from 13 to 10; a folder
// that stacks another level on the request path should be a decision.
const maxLevels = 11

// folder is the piece of the module package p belongs to.
func folder(p string) string {
	parts := strings.Split(p, "/")
	if parts[0] == "internal" && len(parts) > 1 {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
}

// The module's non-test imports: no cycle (go build refuses one anyway),
// at most maxLevels levels, and the public packages a Go user imports stand
// on no internal package but the few leaves listed here.
func TestImportLevels(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/spillway/spillway/"
	imports := map[string][]string{} // package → the module's packages it imports
	folders := map[string][]string{} // folder → the other folders its packages import
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], mod) {
			continue
		}
		p := strings.TrimPrefix(f[0], mod)
		if _, ok := imports[p]; !ok {
			imports[p] = nil
		}
		for _, i := range f[1:] {
			if strings.HasPrefix(i, mod) {
				imports[p] = append(imports[p], strings.TrimPrefix(i, mod))
			}
		}
		fp := folder(p)
		if _, ok := folders[fp]; !ok {
			folders[fp] = nil
		}
		for _, i := range imports[p] {
			if fi := folder(i); fi != fp && !slices.Contains(folders[fp], fi) {
				folders[fp] = append(folders[fp], fi)
			}
		}
	}
	level := map[string]int{}
	var levelOf func(p string, seen []string) int
	levelOf = func(p string, seen []string) int {
		if n, ok := level[p]; ok {
			return n
		}
		if slices.Contains(seen, p) {
			t.Fatalf("an import cycle: %s", strings.Join(append(seen, p), " → "))
		}
		n := 1
		for _, i := range folders[p] {
			n = max(n, 1+levelOf(i, append(seen, p)))
		}
		level[p] = n
		return n
	}
	deepest := ""
	for p := range folders {
		if levelOf(p, nil) > level[deepest] {
			deepest = p
		}
	}
	if level[deepest] > maxLevels {
		t.Errorf("%s stands %d levels up (at most %d)", deepest, level[deepest], maxLevels)
	}
	// the public packages' internal imports: leaves that hold no format
	allowed := map[string][]string{
		"config":   {"internal/redact"},
		"classify": {"internal/redact", "internal/sse"},
		"policy":   {"internal/redact", "internal/words"},
		"events":   {"internal/redact", "internal/lineio", "internal/jsonw"},
	}
	for p, ok := range allowed {
		for _, i := range imports[p] {
			if strings.HasPrefix(i, "internal/") && !slices.Contains(ok, i) {
				t.Errorf("%s imports %s; it may stand on %s only", p, i, strings.Join(ok, ", "))
			}
		}
	}
	t.Logf("%d packages in %d folders, %d levels (the deepest: %s)", len(imports), len(folders), level[deepest], deepest)
}
