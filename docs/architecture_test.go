// Package docs holds the repository's documents; its test keeps
// ARCHITECTURE.md true to the code.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// decls is what a Go package declares: top-level names, and per type its
// methods and fields (and an interface's methods).
type decls struct {
	top     map[string]bool
	members map[string]map[string]bool // type → method or field
}

// scan parses every non-test Go file under root, by package name (the last
// element of a package's import path is how the document names it).
func scan(t *testing.T, root string) (pkgs map[string]*decls, tests map[string]bool) {
	t.Helper()
	pkgs, tests = map[string]*decls{}, map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, "_test.go") { // of a test file, only its tests, by name
			for _, decl := range f.Decls {
				if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") {
					tests[fd.Name.Name] = true
				}
			}
			return nil
		}
		name := filepath.Base(filepath.Dir(path)) // the import path's last element
		if name == "spillway" && f.Name.Name == "main" {
			name = "main"
		}
		p := pkgs[name]
		if p == nil {
			p = &decls{top: map[string]bool{}, members: map[string]map[string]bool{}}
			pkgs[name] = p
		}
		member := func(typ, m string) {
			if p.members[typ] == nil {
				p.members[typ] = map[string]bool{}
			}
			p.members[typ][m] = true
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					p.top[d.Name.Name] = true
					continue
				}
				typ := d.Recv.List[0].Type
				for {
					switch x := typ.(type) {
					case *ast.StarExpr:
						typ = x.X
						continue
					case *ast.IndexExpr:
						typ = x.X
						continue
					case *ast.IndexListExpr:
						typ = x.X
						continue
					}
					break
				}
				if id, ok := typ.(*ast.Ident); ok {
					member(id.Name, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							p.top[n.Name] = true
						}
					case *ast.TypeSpec:
						p.top[s.Name.Name] = true
						var fields *ast.FieldList
						switch tt := s.Type.(type) {
						case *ast.StructType:
							fields = tt.Fields
						case *ast.InterfaceType:
							fields = tt.Methods
						}
						if fields == nil {
							continue
						}
						for _, fl := range fields.List {
							for _, n := range fl.Names {
								member(s.Name.Name, n.Name)
							}
							if len(fl.Names) == 0 { // embedded: its type's name is the field's
								e := fl.Type
								if st, ok := e.(*ast.StarExpr); ok {
									e = st.X
								}
								switch x := e.(type) {
								case *ast.Ident:
									member(s.Name.Name, x.Name)
								case *ast.SelectorExpr:
									member(s.Name.Name, x.Sel.Name)
								}
							}
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs, tests
}

var (
	ident = `[A-Za-z_][A-Za-z0-9_]*`
	// gateway.(*Server).Handler, (*run).attempt, (Candidate).Key
	methodForm = regexp.MustCompile(`^(?:(` + ident + `)\.)?\(\*?(` + ident + `)\)\.(` + ident + `)$`)
	// policy.Engine.Run, Call.Send, wire.Look, upstream.NewRequest
	dotted = regexp.MustCompile(`^` + ident + `(?:\.` + ident + `){1,2}$`)
	bare   = regexp.MustCompile(`^` + ident + `$`)
	// a path in the repository: internal/send, policy/plan.go, scripts/stack-at-read
	pathForm = regexp.MustCompile(`^(?:internal|policy|cmd|scripts|docs|sim|transport|events|config|classify|deploy|testdata)(?:/[\w.*-]+)*/?$|^[\w-]+\.go$`)
)

// TestArchitectureNamesExist checks that every Go function, method, type
// and field that ARCHITECTURE.md names in backticks exists, and every path.
// A span with an underscore in its last name is a configuration key or a
// wire value (gateway.max_body_mb, no_slot), not a Go name.
func TestArchitectureNamesExist(t *testing.T) {
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	pkgs, tests := scan(t, "..")
	anyMember := func(typ, m string) bool {
		for _, p := range pkgs {
			if p.members[typ][m] {
				return true
			}
		}
		return false
	}
	anyName := func(n string) bool {
		if tests[n] {
			return true
		}
		for _, p := range pkgs {
			if p.top[n] {
				return true
			}
			for _, ms := range p.members {
				if ms[n] {
					return true
				}
			}
		}
		return false
	}
	inPkg := func(pkg, n string) bool { p := pkgs[pkg]; return p != nil && p.top[n] }
	memberIn := func(pkg, typ, m string) bool { p := pkgs[pkg]; return p != nil && p.members[typ][m] }
	// a package name the document uses for a standard library one
	// or for an outside one's (River's)
	std := map[string]bool{"http": true, "io": true, "errors": true, "context": true, "time": true, "json": true, "river": true, "riverdriver": true}

	// the text outside fenced blocks; spans as Markdown reads them
	text := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(string(doc), "")
	spans := regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(text, -1)
	checked := 0
	for _, m := range spans {
		s := strings.TrimSpace(m[1])
		s = strings.TrimPrefix(s, "*") // *classify.Failure
		var ok bool
		switch {
		case pathForm.MatchString(s) && strings.ContainsAny(s, "/."):
			_, err := os.Stat(filepath.Join("..", s))
			ok = err == nil
			if !ok && strings.HasSuffix(s, ".go") && !strings.Contains(s, "/") {
				ok = findFile(t, s) // a file named within its package's paragraph
			}
		case methodForm.MatchString(s):
			g := methodForm.FindStringSubmatch(s)
			if g[1] != "" {
				ok = memberIn(g[1], g[2], g[3])
			} else {
				ok = anyMember(g[2], g[3])
			}
		case dotted.MatchString(s):
			parts := strings.Split(s, ".")
			if strings.Contains(parts[len(parts)-1], "_") || std[parts[0]] {
				continue // a configuration key, or the standard library's
			}
			if _, isPkg := pkgs[parts[0]]; isPkg {
				if len(parts) == 2 {
					ok = inPkg(parts[0], parts[1])
				} else {
					ok = memberIn(parts[0], parts[1], parts[2])
				}
				if !ok && len(parts) == 2 && !isUpper(parts[1]) {
					continue // gateway.keys: a configuration key of a section named as a package
				}
			} else if isUpper(parts[0]) && len(parts) == 2 {
				ok = anyMember(parts[0], parts[1]) // Call.Send, Outcome.Unfinished
			} else {
				continue // not a Go name
			}
		case bare.MatchString(s) && !strings.Contains(s, "_") && (isUpper(s) || hasUpperInside(s)):
			ok = anyName(s) // Run, StateOpen, laneKey
		case bare.MatchString(s) && !strings.Contains(s, "_"):
			// a lower-case word: a Go name when one exists, else a
			// wire or configuration value (ready, track: names; true: not)
			continue
		default:
			continue
		}
		checked++
		if !ok {
			t.Errorf("ARCHITECTURE.md names `%s`, which the code does not have", m[1])
		}
	}
	if checked < 100 {
		t.Fatalf("only %d names checked: the document or this test's reading of it changed", checked)
	}
}

func isUpper(s string) bool { return s != "" && s[0] >= 'A' && s[0] <= 'Z' }

func hasUpperInside(s string) bool {
	for i := 1; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// findFile reports whether a file of that name is somewhere in the tree.
func findFile(t *testing.T, name string) bool {
	t.Helper()
	found := false
	filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// Every package of the module is named in ARCHITECTURE.md's list of packages
// (as `internal/x`, or as its import path's last part for a public one): a
// package added without a word there fails.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(doc), "## Packages")
	end := strings.Index(string(doc), "## One gateway request")
	if start < 0 || end < start {
		t.Fatal("ARCHITECTURE.md has no Packages section before the request walk")
	}
	list := string(doc[start:end])
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" || d.Name() == "docs" || d.Name() == "scripts" || d.Name() == "deploy" || d.Name() == "cmd") {
			return filepath.SkipDir
		}
		gos, _ := filepath.Glob(filepath.Join(path, "*.go"))
		if len(gos) == 0 || path == ".." {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../"))
		if !strings.Contains(list, "`"+rel+"`") && !strings.Contains(list, "`"+rel+"/") && !strings.Contains(list, "`"+rel+"`,") {
			t.Errorf("ARCHITECTURE.md's Packages section does not name `%s`", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
