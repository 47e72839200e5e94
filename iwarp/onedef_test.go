package iwarp

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// moduleSource parses every non-test Go file of the module.
func moduleSource(t *testing.T) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "module root")
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = f
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, len(files), 100, "module source found")
	return fset, files
}

// intValue evaluates an integer literal expression (literals, parentheses,
// + - * <<); ok is false for anything that names another definition.
func intValue(e ast.Expr) (int64, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.INT {
			return 0, false
		}
		v, err := strconv.ParseInt(strings.ReplaceAll(e.Value, "_", ""), 0, 64)
		return v, err == nil
	case *ast.ParenExpr:
		return intValue(e.X)
	case *ast.BinaryExpr:
		x, ok1 := intValue(e.X)
		y, ok2 := intValue(e.Y)
		if !ok1 || !ok2 {
			return 0, false
		}
		switch e.Op {
		case token.ADD:
			return x + y, true
		case token.SUB:
			return x - y, true
		case token.MUL:
			return x * y, true
		case token.SHL:
			return x << y, true
		}
	}
	return 0, false
}

type definition struct {
	name  string
	value ast.Expr // nil: implicit (iota) or none
	at    string
}

// definitions lists every const and var spec with its value.
func definitions(fset *token.FileSet, files map[string]*ast.File) []definition {
	var defs []definition
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, id := range vs.Names {
				d := definition{name: id.Name, at: fset.Position(id.Pos()).String()}
				if i < len(vs.Values) {
					d.value = vs.Values[i]
				}
				defs = append(defs, d)
			}
			return true
		})
	}
	return defs
}

// TestOneDefinition_WireConstants: each of these iWARP values is defined
// in exactly one place in the module's non-test code: a const, var or
// literal expression of its value, or any definition under its name (so no
// alias re-exports it). Comments may mention the numbers.
func TestOneDefinition_WireConstants(t *testing.T) {
	fset, files := moduleSource(t)
	defs := definitions(fset, files)
	byValue := []struct {
		what  string
		value int64
		name  string // optional name filter (regexp)
	}{
		{"RFC 5043 §9 MULPDU floor", 516, ""},
		{"RFC 5044 §3 MPA ULPDU limit", 64768, ""},
		{"RFC 5044 §4.3 marker period", 512, `(?i)marker`},
		{"RFC 5041 §4.2 tagged DDP header length", 14, `(?i)(tagged|ddp).*len`},
		{"RFC 5041 §4.3 untagged DDP header length", 18, `(?i)(untagged|ddp).*len`},
	}
	for _, c := range byValue {
		var at []string
		for _, d := range defs {
			if v, ok := intValue(d.value); ok && v == c.value && (c.name == "" || regexp.MustCompile(c.name).MatchString(d.name)) {
				at = append(at, d.name+" at "+d.at)
			}
		}
		assert.Len(t, at, 1, "%s (%d) defined at %v", c.what, c.value, at)
	}
	// Literal 0x3FFE in code: the clamp is MaxIRD.
	for p, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if v, ok := intValue(asExpr(n)); ok && v == 0x3FFE {
				if _, isLit := n.(*ast.BasicLit); isLit {
					assert.Fail(t, "0x3FFE literal", "%s: %s (use iwarp.MaxIRD)", p, fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
	byName := []string{
		`^(DDP)?TaggedHeaderLen$`, `^(DDP)?UntaggedHeaderLen$`, `^DDPControlLen$`,
		`^(RDMAP)?ControlLen$`, `^(RDMAP)?ReadRequestLen$`, `^(RDMAP)?AtomicRequestLen$`,
		`^(RDMAP)?AtomicResponseLen$`, `^(RDMAP)?ImmediateLen$`, `^(RDMAP)?TerminateControlLen$`,
		`^(RDMAP)?TerminateSegLenLen$`, `^(RDMAP)?TerminateMaxLen$`,
		`(?i)^(mpa)?fpduheaderlen$`, `(?i)^(mpa)?crclen$`, `(?i)^(mpa)?max(mpa)?ulpdu$`,
		`(?i)^(mpa)?min(mpa)?mulpdu$`, `(?i)^(mpa)?markerlen$`, `(?i)^(mpa)?marker(interval|period)$`,
		`(?i)^(sctp)?minmulpdu$`, `^(MPA)?MULPDUFor$`,
		`^DefaultIRD$`, `^DefaultORD$`, `^DefaultIRDORD$`, `^DefaultMaxIRD$`, `^MaxIRD$`,
		`^(RDMAP)?NumOpcodes$`,
	}
	// RFC 5040 §4.1 opcodes and queue numbers, RFC 7306 §4.1.
	for _, op := range []string{"Write", "ReadRequest", "ReadResponse", "Send", "SendInvalidate",
		"SendSE", "SendSEInvalidate", "Terminate", "Immediate", "ImmediateSE", "AtomicRequest",
		"AtomicResponse"} {
		byName = append(byName, `^(RDMAP)?Op`+op+`$`)
	}
	for _, qn := range []string{"Send", "ReadRequest", "Terminate", "AtomicResponse"} {
		byName = append(byName, `^(RDMAP)?QN`+qn+`$`)
	}
	for _, re := range byName {
		r := regexp.MustCompile(re)
		var at []string
		for _, d := range defs {
			if r.MatchString(d.name) {
				at = append(at, d.name+" at "+d.at)
			}
		}
		assert.LessOrEqual(t, len(at), 1, "%s defined more than once: %v", re, at)
	}
}

func asExpr(n ast.Node) ast.Expr {
	e, _ := n.(ast.Expr)
	return e
}

// TestOneDefinition_TerminateTriples: every (Layer, EType, Code) triple of
// the Terminate code space is written once, as a row of the table in
// terminate.go; no other non-test code composes a constant TermCode, nor a
// ddp.Error or llp.Error from a literal or a row's Code.
func TestOneDefinition_TerminateTriples(t *testing.T) {
	fset, files := moduleSource(t)
	// Values of iwarp's constants, by name, for resolving row arguments.
	consts := map[string]int64{}
	for _, d := range definitions(fset, map[string]*ast.File{"": files["iwarp/terminate.go"]}) {
		if v, ok := intValue(d.value); ok {
			consts[d.name] = v
		}
	}
	resolve := func(e ast.Expr) (int64, bool) {
		if c, ok := e.(*ast.CallExpr); ok && len(c.Args) == 1 { // uint8(X)
			e = c.Args[0]
		}
		if v, ok := intValue(e); ok {
			return v, true
		}
		switch e := e.(type) {
		case *ast.Ident:
			v, ok := consts[e.Name]
			return v, ok
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok && x.Name == "iwarp" {
				v, ok := consts[e.Sel.Name]
				return v, ok
			}
		}
		return 0, false
	}
	rows := map[[3]int64]string{}
	for p, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "row" && p == "iwarp/terminate.go" && len(n.Args) == 4 {
					var k [3]int64
					for i := range k {
						v, ok := resolve(n.Args[i])
						require.True(t, ok, "row argument at %s", fset.Position(n.Pos()))
						k[i] = v
					}
					if prev, dup := rows[k]; dup {
						assert.Fail(t, "triple twice", "%v at %s and %s", k, prev, fset.Position(n.Pos()))
					}
					rows[k] = fset.Position(n.Pos()).String()
				}
			case *ast.CompositeLit:
				name := typeName(n.Type)
				switch name {
				case "TermCode", "iwarp.TermCode":
					allConst := len(n.Elts) > 0
					for _, e := range n.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok {
							e = kv.Value
						}
						if _, ok := resolve(e); !ok {
							allConst = false
						}
					}
					assert.False(t, allConst, "constant TermCode outside the table at %s", fset.Position(n.Pos()))
				case "Error", "ddp.Error", "llp.Error":
					for _, e := range n.Elts {
						kv, ok := e.(*ast.KeyValueExpr)
						if !ok || typeName(kv.Key) != "Code" {
							continue
						}
						if _, lit := kv.Value.(*ast.BasicLit); lit || strings.HasPrefix(typeName(kv.Value), "iwarp.Term") {
							assert.Fail(t, "Terminate code composed outside the table", "%s at %s", name, fset.Position(n.Pos()))
						}
					}
				}
			}
			return true
		})
	}
	assert.Len(t, rows, len(TermCodes()), "every row found in the source")
}

// typeName renders an identifier or selector chain ("iwarp.TermCode").
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return typeName(e.X) + "." + e.Sel.Name
	}
	return ""
}
