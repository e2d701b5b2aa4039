package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Sizes a reader can hold: no non-test Go file over 800 lines, and at most
// 10 functions over 100 lines in the module (each one a candidate to split).
func TestSizes(t *testing.T) {
	const maxFile, maxFunc, maxLongFuncs = 800, 100, 10
	fset := token.NewFileSet()
	var long []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if n := fset.Position(f.End()).Line; n > maxFile {
			t.Errorf("%s has %d lines (at most %d): split it by what its parts do", path, n, maxFile)
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok {
				if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFunc {
					long = append(long, fd.Name.Name+" ("+path+")")
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(long) > maxLongFuncs {
		t.Errorf("%d functions run over %d lines (at most %d): %s", len(long), maxFunc, maxLongFuncs, strings.Join(long, ", "))
	}
}
