package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// exportedNamesBudget is the most exported names the module's importable
// packages may hold together (issue 45). Lower it as names become internal.
const exportedNamesBudget = 375

// exportedNames counts, per importable package directory (no internal/ or
// testdata/ segment), the exported types, funcs, methods on exported types,
// consts and vars of its non-test files. Struct fields are not counted.
func exportedNames(t *testing.T, root string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (strings.HasPrefix(base, ".") || base == "testdata" || base == "internal") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		counts[filepath.Dir(rel)] += exportedInFile(f)
		return nil
	})
	require.NoError(t, err)
	return counts
}

func exportedInFile(f *ast.File) int {
	n := 0
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil || recvExported(d.Recv.List[0].Type) {
				n++
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						n++
					}
				case *ast.ValueSpec:
					for _, name := range s.Names {
						if name.IsExported() {
							n++
						}
					}
				}
			}
		}
	}
	return n
}

func recvExported(e ast.Expr) bool {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}

// TestExportedNamesBudget keeps the public surface from growing back:
// it fails when the module exports more names than exportedNamesBudget.
func TestExportedNamesBudget(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	counts := exportedNames(t, root)
	total := 0
	pkgs := make([]string, 0, len(counts))
	for p, n := range counts {
		total += n
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	var b strings.Builder
	for _, p := range pkgs {
		b.WriteString(p + ": " + strconv.Itoa(counts[p]) + "\n")
	}
	t.Logf("exported names: %d\n%s", total, b.String())
	require.LessOrEqual(t, total, exportedNamesBudget,
		"the module exports more names than its budget; per package:\n%s", b.String())
}
