package formats

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The format types: a switch on one, or a comparison with one of its
// constants, is a format's truth cut out of its folder.
var formatTypes = map[string]bool{
	"github.com/spillway/spillway/internal/wire.Kind": true,
	"github.com/spillway/spillway/config.Format":      true,
}

// Where a format's truth may be asked by its kind or format: the folders
// and the registry (internal/format/...), and the simulator, which reads
// the formats on its own on purpose (sim/doc.go: the independent oracle
// the translation is tested against).
func exempt(pkg string) bool {
	const mod = "github.com/spillway/spillway/"
	return strings.HasPrefix(pkg, mod+"internal/format") || pkg == mod+"sim" || strings.HasPrefix(pkg, mod+"sim/")
}

// TestFormatsLiveInTheirFolders: no non-test Go file outside
// internal/format/... and sim/ switches on a wire.Kind or a config.Format,
// or compares one with a constant; such code asks a format value
// (formats.Of, formats.WireOf) instead. A method of the type itself
// (wire.Kind.Streams, config.Format.ModelInPath) says what the type is and
// is allowed.
func TestFormatsLiveInTheirFolders(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the module")
	}
	root := filepath.Join("..", "..", "..")
	exports := map[string]string{}
	for _, l := range goList(t, root, "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", "./...") {
		path, file, _ := strings.Cut(l, "\t")
		exports[path] = file
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var found []string
	for _, l := range goList(t, root, "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \",\"}}", "./...") {
		parts := strings.Split(l, "\t")
		if exempt(parts[0]) || parts[2] == "" {
			continue
		}
		var files []*ast.File
		for _, name := range strings.Split(parts[2], ",") {
			f, err := parser.ParseFile(fset, filepath.Join(parts[1], name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: imp.(types.ImporterFrom)}
		if _, err := conf.Check(parts[0], fset, files, info); err != nil {
			t.Fatalf("%s: %v", parts[0], err)
		}
		for _, f := range files {
			found = append(found, formatSwitches(fset, f, info)...)
		}
	}
	for _, s := range found {
		t.Errorf("%s: a format's truth outside its folder: ask a format value (formats.Of, formats.WireOf)", s)
	}
}

// formatSwitches are the places in f that switch on a format type or
// compare one with a constant, outside the type's own methods.
func formatSwitches(fset *token.FileSet, f *ast.File, info *types.Info) []string {
	isFormat := func(e ast.Expr) bool {
		tv, ok := info.Types[e]
		if !ok {
			return false
		}
		n, ok := types.Unalias(tv.Type).(*types.Named)
		return ok && n.Obj().Pkg() != nil && formatTypes[n.Obj().Pkg().Path()+"."+n.Obj().Name()]
	}
	// a constant other than "" (the zero value: no format, not yet known)
	isConst := func(e ast.Expr) bool {
		v := info.Types[e].Value
		return v != nil && v.ExactString() != `""`
	}
	var out []string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil && len(fn.Recv.List) == 1 && isFormat(fn.Recv.List[0].Type) {
			continue // the type's own method
		}
		ast.Inspect(d, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SwitchStmt:
				if n.Tag != nil && isFormat(n.Tag) {
					out = append(out, fmt.Sprintf("%s: switch on %s", fset.Position(n.Pos()), types.ExprString(n.Tag)))
				}
			case *ast.BinaryExpr:
				if n.Op != token.EQL && n.Op != token.NEQ {
					break
				}
				if isFormat(n.X) && isConst(n.Y) || isFormat(n.Y) && isConst(n.X) {
					out = append(out, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), types.ExprString(n)))
				}
			}
			return true
		})
	}
	return out
}

func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}
