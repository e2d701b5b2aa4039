package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// slug is the anchor GitHub gives a heading: its text without markup,
// lowercased, every character but letters, digits, spaces, '-' and '_'
// dropped, spaces turned to '-'.
func slug(heading string) string {
	heading = mdLink.ReplaceAllString(heading, "$1") // a link's text stays
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

var (
	// mdLink is an inline link or image, [text](target) or ![alt](target);
	// the target may carry a title after a space
	mdLink     = regexp.MustCompile(`!?\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)`)
	codeSpan   = regexp.MustCompile("(?s)(`+).+?`+")
	atxHeading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// page is what a Markdown file offers links: its anchors, and its prose
// (outside fenced blocks and code spans) with the line each part starts on.
type page struct {
	anchors map[string]bool
	prose   []proseLine
}

type proseLine struct {
	line int
	text string
}

func readPage(t *testing.T, path string) page {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := page{anchors: map[string]bool{}}
	seen := map[string]int{}
	fence := ""
	var para []proseLine
	flush := func() {
		// a code span may run over the lines of a paragraph: blank it out
		// in the paragraph as a whole, then split it back into its lines
		var lines []string
		for _, l := range para {
			lines = append(lines, l.text)
		}
		joined := codeSpan.ReplaceAllStringFunc(strings.Join(lines, "\n"), func(s string) string {
			return regexp.MustCompile(`[^\n]`).ReplaceAllString(s, " ")
		})
		for i, l := range strings.Split(joined, "\n") {
			if i < len(para) {
				p.prose = append(p.prose, proseLine{para[i].line, l})
			}
		}
		para = nil
	}
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			flush()
			fence = trimmed[:3]
			continue
		}
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			flush()
			s := slug(m[2])
			if n := seen[s]; n > 0 {
				p.anchors[s+"-"+strconv.Itoa(n)] = true
			} else {
				p.anchors[s] = true
			}
			seen[s]++
			p.prose = append(p.prose, proseLine{i + 1, codeSpan.ReplaceAllString(line, "")})
			continue
		}
		if trimmed == "" {
			flush()
			continue
		}
		para = append(para, proseLine{i + 1, line})
	}
	flush()
	return p
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Across vendors", "across-vendors"},
		{"`spillway explain`: what kind of failure is this?", "spillway-explain-what-kind-of-failure-is-this"},
		{"The dashboard: http://127.0.0.1:8787/", "the-dashboard-http1270018787"},
		{"A plain upstream: `catalog: none`", "a-plain-upstream-catalog-none"},
		{"Order within a priority", "order-within-a-priority"},
		{"SQLite: one runner", "sqlite-one-runner"},
		{"One relay, the typed contract, the record path: before and after (2026-12-01)", "one-relay-the-typed-contract-the-record-path-before-and-after-2026-12-01"},
		{"[Fleet mode](fleet.md) and snake_case", "fleet-mode-and-snake_case"},
	} {
		if got := slug(tc.heading); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestReadPageSkipsCode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.md")
	text := "# Title\n\nSee [a](a.md) and `[b](b.md)`, and `a code span\nover two lines [c](c.md)` then [d](d.md).\n\n```\n[e](e.md)\n## Not a heading\n```\n\n## Twice\n\n## Twice\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	p := readPage(t, path)
	var targets []string
	for _, l := range p.prose {
		for _, m := range mdLink.FindAllStringSubmatch(l.text, -1) {
			targets = append(targets, strconv.Itoa(l.line)+":"+m[2])
		}
	}
	if got, want := strings.Join(targets, " "), "3:a.md 4:d.md"; got != want {
		t.Errorf("links %q, want %q", got, want)
	}
	for _, a := range []string{"title", "twice", "twice-1"} {
		if !p.anchors[a] {
			t.Errorf("no anchor %q in %v", a, p.anchors)
		}
	}
	if p.anchors["not-a-heading"] {
		t.Error("a heading inside a fenced block became an anchor")
	}
}

// Every relative link of the README, BENCHMARKS.md and the pages of docs/
// names a file that exists, and every #anchor a heading of the page it
// points into.
func TestLinksResolve(t *testing.T) {
	root, _ := filepath.Abs("..")
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "BENCHMARKS.md")}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, pages...)
	if len(files) < 10 {
		t.Fatalf("only %d documents found", len(files))
	}
	read := map[string]page{}
	get := func(path string) page {
		if p, ok := read[path]; ok {
			return p
		}
		read[path] = readPage(t, path)
		return read[path]
	}
	checked := 0
	for _, file := range files {
		rel, _ := filepath.Rel(root, file)
		for _, l := range get(file).prose {
			for _, m := range mdLink.FindAllStringSubmatch(l.text, -1) {
				target := m[2]
				if target == "" || regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`).MatchString(target) {
					continue // a URL of its own scheme (https:, mailto:)
				}
				checked++
				where := rel + ":" + strconv.Itoa(l.line)
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s: the link %s names no file (%v)", where, target, err)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s: the link %s has an anchor into a file that is not Markdown", where, target)
					continue
				}
				if !get(dest).anchors[anchor] {
					t.Errorf("%s: the link %s names no heading of %s", where, target, filepath.Base(dest))
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d links checked: the documents' form changed?", checked)
	}
}
