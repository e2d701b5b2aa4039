package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// --version names the commit a binary was built from: by the Go tool's own
// stamp in a git checkout, and by scripts/build's -ldflags. The test makes
// a repository of its own from the tracked files.
func TestVersionNamesTheCommit(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary twice")
	}
	root, _ := filepath.Abs("../..")
	files, err := exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		t.Skipf("SKIPPED: not a git checkout: %v", err)
	}
	repo := t.TempDir()
	for _, f := range strings.Split(strings.TrimSpace(string(files)), "\n") {
		if strings.HasPrefix(f, "testdata/") && !strings.HasPrefix(f, "testdata/config") {
			continue // not needed to build
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the work tree
		}
		fi, _ := os.Stat(filepath.Join(root, f))
		os.MkdirAll(filepath.Dir(filepath.Join(repo, f)), 0o755)
		if err := os.WriteFile(filepath.Join(repo, f), b, fi.Mode()); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "version test")
	head := git("rev-parse", "HEAD")

	// -trimpath: without it the Go tool keys every compiled package by
	// its directory, a new one at each run, and so compiles the whole
	// module twice a run (once per build below); the stamps are the same
	buildEnv := append(os.Environ(), "GOFLAGS=-trimpath")
	bin := filepath.Join(t.TempDir(), "spillway")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/spillway")
	build.Dir = repo
	build.Env = buildEnv
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil || !strings.Contains(string(out), "(commit "+head[:12]+", ") {
			t.Fatalf("%v: %q (%v), want commit %s", args, out, err, head[:12])
		}
	}
	stamped := filepath.Join(t.TempDir(), "spillway")
	sb := exec.Command("bash", "scripts/build", stamped)
	sb.Dir = repo
	sb.Env = buildEnv
	if out, err := sb.CombinedOutput(); err != nil {
		t.Fatalf("scripts/build: %v\n%s", err, out)
	}
	out, _ := exec.Command(stamped, "--version").Output()
	if !strings.Contains(string(out), "(commit "+head[:12]+", ") || !strings.HasPrefix(string(out), "spillway "+head[:7]) {
		t.Fatalf("scripts/build: %q, want version and commit %s", out, head[:12])
	}
}
