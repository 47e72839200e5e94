package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wireConst is an iWARP value the module defines once, in home: a const or
// var whose value is a literal expression equal to value (and, when name is
// set, whose name matches it) anywhere else is a second definition.
type wireConst struct {
	what  string
	value int64
	name  string // regexp on the defined name; "" matches any name
	home  string // module-relative file of the one definition
	// anyLiteral also rejects the value as a bare literal anywhere in code
	// outside home (for values no other quantity shares).
	anyLiteral bool
}

// wireConsts are the values of issue 45's "defined in exactly one place":
// the RFC 5043 MULPDU floor, MPA's ULPDU limit and marker period, and the
// DDP and RDMAP header lengths.
var wireConsts = []wireConst{
	{"RFC 5043 §9 SCTP MinMULPDU", 516, "", "iwarp/sctp.go", true},
	{"RFC 5044 §3 MPA ULPDU limit", 64768, "", "internal/iwarpwire/mpa.go", true},
	{"RFC 5044 §4.3 MPA marker period", 512, `(?i)marker`, "internal/iwarpwire/mpa.go", false},
	{"RFC 5044 §4.2 MPA marker length", 4, `(?i)markerlen`, "internal/iwarpwire/mpa.go", false},
	{"RFC 5044 §4.1 MPA CRC length", 4, `(?i)crclen`, "internal/iwarpwire/mpa.go", false},
	{"RFC 5044 §4.1 MPA FPDU header length", 2, `(?i)fpdu.*len`, "internal/iwarpwire/mpa.go", false},
	{"RFC 5044 §7.1.1 MPA Request/Reply Frame header length", 20, `(?i)frame.*header.*len`, "internal/iwarpwire/mpa.go", false},
	{"RFC 5041 §4.1 DDP control length", 1, `(?i)ddp.*control.*len`, "internal/iwarpwire/ddp.go", false},
	{"RFC 5041 §4.2 tagged DDP header length", 14, `(?i)(tagged|ddp).*len`, "internal/iwarpwire/ddp.go", false},
	{"RFC 5041 §4.3 untagged DDP header length", 18, `(?i)(untagged|ddp).*len`, "internal/iwarpwire/ddp.go", false},
	{"RFC 5040 §4.8 Terminate Control length", 4, `(?i)term.*control.*len`, "internal/iwarpwire/rdmap.go", false},
	{"RFC 5040 §4.8 Terminate DDP Segment Length length", 2, `(?i)term.*seg.*len`, "internal/iwarpwire/rdmap.go", false},
	{"RFC 5040 §4.1 RDMAP control length", 1, `(?i)^(rdmap)?controllen$`, "rdmap/control.go", false},
	{"RFC 5040 §4.4 Read Request header length", 28, `(?i)readrequestlen`, "rdmap/readreq.go", false},
	{"RFC 7306 §5.2.1 Atomic Request header length", 52, `(?i)atomicrequestlen`, "rdmap/atomicreq.go", false},
	{"RFC 7306 §5.2.2 Atomic Response header length", 12, `(?i)atomicresponselen`, "rdmap/atomicresp.go", false},
	{"RFC 7306 §6 Immediate Data length", 8, `(?i)immediatelen`, "rdmap/immediate.go", false},
	{"RFC 6581 §9 IRD/ORD word length", 4, `(?i)irdordlen`, "internal/iwarpwire/irdord.go", false},
}

// wireNames are names that may be defined at most once in the module, so
// that no alias re-exports a wire value under its old name.
var wireNames = []string{
	`^(DDP)?TaggedHeaderLen$`, `^(DDP)?UntaggedHeaderLen$`, `^DDPControlLen$`,
	`^(RDMAP)?TerminateControlLen$`, `^(RDMAP)?TerminateSegLenLen$`,
	`(?i)^(mpa)?fpduheaderlen$`, `(?i)^(mpa)?crclen$`, `(?i)^(mpa)?max(mpa)?ulpdu$`,
	`(?i)^(mpa)?min(mpa)?mulpdu$`, `(?i)^(mpa)?markerlen$`, `(?i)^(mpa)?marker(interval|period)$`,
	`(?i)^(sctp)?minmulpdu$`, `(?i)^irdordlen$`, `(?i)^(mpa)?frameheaderlen$`,
	`^DefaultIRD$`, `^DefaultORD$`, `^DefaultIRDORD$`, `^DefaultMaxIRD$`, `^MaxIRD$`,
	`^(RDMAP)?NumOpcodes$`,
	`^(RDMAP)?QNSend$`, `^(RDMAP)?QNReadRequest$`, `^(RDMAP)?QNTerminate$`, `^(RDMAP)?QNAtomicResponse$`,
}

// parseTree parses every non-test Go file under root (testdata and dot
// directories skipped), keyed by slash-separated path relative to root.
func parseTree(t *testing.T, fset *token.FileSet, root string) map[string]*ast.File {
	t.Helper()
	files := map[string]*ast.File{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
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
	return files
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
	case *ast.CallExpr: // a conversion such as uint32(516)
		if len(e.Args) == 1 {
			if _, ok := e.Fun.(*ast.Ident); ok {
				return intValue(e.Args[0])
			}
		}
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
	file  string
	at    string
}

// definitions lists every const and var spec of files with its value.
func definitions(fset *token.FileSet, files map[string]*ast.File) []definition {
	var defs []definition
	for p, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, id := range vs.Names {
				d := definition{name: id.Name, file: p, at: p + ":" + strconv.Itoa(fset.Position(id.Pos()).Line)}
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

// oneDefinitionViolations returns, sorted, every definition of consts
// outside its home, every const missing from its home, every bare literal of
// an anyLiteral value outside its home, and every name of names defined
// more than once.
func oneDefinitionViolations(fset *token.FileSet, files map[string]*ast.File, consts []wireConst, names []string) []string {
	defs := definitions(fset, files)
	var bad []string
	for _, c := range consts {
		var re *regexp.Regexp
		if c.name != "" {
			re = regexp.MustCompile(c.name)
		}
		atHome := 0
		for _, d := range defs {
			v, ok := intValue(d.value)
			if !ok || v != c.value || (re != nil && !re.MatchString(d.name)) {
				continue
			}
			if d.file == c.home {
				atHome++
				continue
			}
			bad = append(bad, c.what+" ("+strconv.FormatInt(c.value, 10)+") defined again as "+d.name+" at "+d.at+", home "+c.home)
		}
		if atHome != 1 {
			bad = append(bad, c.what+": "+strconv.Itoa(atHome)+" definitions in "+c.home+", want 1")
		}
		if !c.anyLiteral {
			continue
		}
		for p, f := range files {
			if p == c.home {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if l, ok := n.(*ast.BasicLit); ok {
					if v, ok := intValue(l); ok && v == c.value {
						bad = append(bad, c.what+" as the literal "+l.Value+" at "+p+":"+strconv.Itoa(fset.Position(l.Pos()).Line)+", home "+c.home)
					}
				}
				return true
			})
		}
	}
	for _, n := range names {
		re := regexp.MustCompile(n)
		var at []string
		for _, d := range defs {
			if re.MatchString(d.name) {
				at = append(at, d.name+" at "+d.at)
			}
		}
		if len(at) > 1 {
			sort.Strings(at)
			bad = append(bad, n+" defined more than once: "+strings.Join(at, ", "))
		}
	}
	sort.Strings(bad)
	return bad
}

// TestOneDefinition_WireConstants: each iWARP wire value of wireConsts is
// defined once in the module's non-test code, in its home file, and no name
// of wireNames twice. Comments may mention the numbers.
func TestOneDefinition_WireConstants(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	fset := token.NewFileSet()
	files := parseTree(t, fset, root)
	require.Greater(t, len(files), 100, "module source found")
	bad := oneDefinitionViolations(fset, files, wireConsts, wireNames)
	assert.Empty(t, bad, "iWARP wire values defined outside their one home:\n%s", strings.Join(bad, "\n"))
	// Literal 0x3FFE: the largest negotiable IRD/ORD is iwarp.MaxIRD.
	for p, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if l, ok := n.(*ast.BasicLit); ok {
				if v, ok := intValue(l); ok && v == 0x3FFE {
					assert.Fail(t, "0x3FFE literal", "%s: %s (use iwarp.MaxIRD)", p, fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
}

// TestOneDefinition_FindsStrays runs the check on small synthetic trees: a
// second definition of a value, under any name or spelling, is reported;
// the home alone is not.
func TestOneDefinition_FindsStrays(t *testing.T) {
	consts := []wireConst{
		{"floor", 516, "", "iwarp/sctp.go", true},
		{"marker period", 512, `(?i)marker`, "wire/mpa.go", false},
		{"tagged header", 14, `(?i)tagged.*len`, "wire/ddp.go", false},
	}
	home := map[string]string{
		"iwarp/sctp.go": "package iwarp\nconst SCTPMinMULPDU = 516\n",
		"wire/mpa.go":   "package wire\nconst MarkerInterval = 512\n",
		"wire/ddp.go":   "package wire\nconst TaggedHeaderLen = 14\n",
	}
	for _, tc := range []struct {
		name  string
		extra map[string]string
		names []string
		want  []string // substrings, one per expected violation
	}{
		{"home only", nil, nil, nil},
		{"const elsewhere", map[string]string{"llp/llp.go": "package llp\nconst MinMULPDU = 516\n"},
			nil, []string{"floor (516) defined again as MinMULPDU at llp/llp.go:2", "floor as the literal 516 at llp/llp.go:2"}},
		{"computed var elsewhere", map[string]string{"pmtu/p.go": "package pmtu\nvar floor = uint32(512 + 4)\n"},
			nil, []string{"floor (516) defined again as floor at pmtu/p.go:2"}},
		{"literal in code", map[string]string{"ddp/tx.go": "package ddp\nfunc f(n int) int { return max(n, 516) }\n"},
			nil, []string{"floor as the literal 516 at ddp/tx.go:2"}},
		{"named value elsewhere", map[string]string{"mpa/m.go": "package mpa\nconst (\n\tmarkerPeriod = 1 << 9\n\tprivateData = 512\n)\n"},
			nil, []string{"marker period (512) defined again as markerPeriod at mpa/m.go:3"}},
		{"header length elsewhere", map[string]string{"rdmap/r.go": "package rdmap\nconst ddpTaggedLen = 14\n"},
			nil, []string{"tagged header (14) defined again as ddpTaggedLen at rdmap/r.go:2"}},
		{"alias by name", map[string]string{"ddp/d.go": "package ddp\nconst TaggedHeaderLen = wire.TaggedHeaderLen\n"},
			[]string{`^TaggedHeaderLen$`}, []string{"^TaggedHeaderLen$ defined more than once"}},
		{"home missing", map[string]string{"wire/ddp.go": "package wire\nconst TaggedHeaderLen = 4 + 10 + 1\n"},
			nil, []string{"tagged header: 0 definitions in wire/ddp.go, want 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			files := map[string]*ast.File{}
			src := map[string]string{}
			for p, s := range home {
				src[p] = s
			}
			for p, s := range tc.extra {
				src[p] = s
			}
			for p, s := range src {
				f, err := parser.ParseFile(fset, p, s, parser.SkipObjectResolution)
				require.NoError(t, err)
				files[p] = f
			}
			bad := oneDefinitionViolations(fset, files, consts, tc.names)
			require.Len(t, bad, len(tc.want), "%v", bad)
			for i, w := range tc.want {
				assert.Contains(t, bad[i], w)
			}
		})
	}
}

// termTableFile holds the Terminate code space: every (Layer, EType, Code)
// triple is one row(...) call there.
const termTableFile = "iwarp/terminate.go"

// tripleViolations returns the rows of the Terminate table written twice
// and, outside the table file, every constant TermCode composite and every
// iwarpwire.DDPError or llp.Error whose Code is a literal or a table row's field
// (the error is built from the row, not from its code).
func tripleViolations(fset *token.FileSet, files map[string]*ast.File) (rows int, bad []string) {
	consts := map[string]int64{}
	if tf, ok := files[termTableFile]; ok {
		for _, d := range definitions(fset, map[string]*ast.File{termTableFile: tf}) {
			if v, ok := intValue(d.value); ok {
				consts[d.name] = v
			}
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
	seen := map[[3]int64]string{}
	for p, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil {
				return false
			}
			at := p + ":" + strconv.Itoa(fset.Position(n.Pos()).Line)
			switch n := n.(type) {
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "row" && p == termTableFile && len(n.Args) == 4 {
					var k [3]int64
					for i := range k {
						v, ok := resolve(n.Args[i])
						if !ok {
							bad = append(bad, "row argument not a constant at "+at)
						}
						k[i] = v
					}
					if prev, dup := seen[k]; dup {
						bad = append(bad, "triple written twice at "+prev+" and "+at)
					}
					seen[k] = at
				}
			case *ast.CompositeLit:
				switch name := typeName(n.Type); name {
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
					if allConst {
						bad = append(bad, "constant TermCode outside the table at "+at)
					}
				case "Error", "DDPError", "iwarpwire.DDPError", "llp.Error":
					for _, e := range n.Elts {
						kv, ok := e.(*ast.KeyValueExpr)
						if !ok || typeName(kv.Key) != "Code" {
							continue
						}
						if _, lit := kv.Value.(*ast.BasicLit); lit || strings.HasPrefix(typeName(kv.Value), "iwarp.Term") {
							bad = append(bad, "Terminate code composed outside the table in "+name+" at "+at)
						}
					}
				}
			}
			return true
		})
	}
	sort.Strings(bad)
	return len(seen), bad
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

// TestOneDefinition_TerminateTriples: every (Layer, EType, Code) triple of
// the Terminate code space is written once, as a row of iwarp's table; no
// other non-test code composes a constant TermCode or an error's code.
func TestOneDefinition_TerminateTriples(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	fset := token.NewFileSet()
	rows, bad := tripleViolations(fset, parseTree(t, fset, root))
	assert.Empty(t, bad, strings.Join(bad, "\n"))
	assert.Equal(t, 14+12+7, rows, "RFC 5040 Figure 9, RFC 5041 §7.2 and RFC 5044 §8 / RFC 6581 §8 rows")
}

func TestOneDefinition_TerminateTriplesFindsStrays(t *testing.T) {
	table := "package iwarp\nconst LayerDDP uint8 = 1\nvar Term = TermTable{\n\tA: row(LayerDDP, 1, 0, \"a\"),\n\tB: row(LayerDDP, 1, 1, \"b\"),\n}\n"
	for _, tc := range []struct {
		name        string
		table, code string
		want        []string
	}{
		{"clean", table, "package ddp\nvar e = NewError(iwarp.Term.A, nil)\n", nil},
		{"row twice", table + "var C = row(LayerDDP, 1, 0, \"c\")\n", "package ddp\n",
			[]string{"triple written twice"}},
		{"constant TermCode", table, "package rdmap\nvar c = iwarp.TermCode{Layer: iwarp.LayerDDP, EType: 1, Code: 0}\n",
			[]string{"constant TermCode outside the table at rdmap/x.go:2"}},
		{"error from a literal code", table, "package mpa\nvar e = &llp.Error{EType: 0, Code: 2}\n",
			[]string{"Terminate code composed outside the table in llp.Error at mpa/x.go:2"}},
		{"error from a row's code", table, "package mpa\nvar e = &llp.Error{Code: iwarp.Term.A.Code}\n",
			[]string{"Terminate code composed outside the table in llp.Error"}},
		{"DDP error from a row's code", table, "package ddp\nvar e = &iwarpwire.DDPError{Type: 1, Code: iwarp.Term.A.Code}\n",
			[]string{"Terminate code composed outside the table in iwarpwire.DDPError"}},
		{"TermCode from variables", table, "package llp\nfunc f(e, c uint8) iwarp.TermCode { return iwarp.TermCode{Layer: iwarp.LayerDDP, EType: e, Code: c} }\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			files := map[string]*ast.File{}
			for p, s := range map[string]string{termTableFile: tc.table, strings.SplitN(tc.code[8:], "\n", 2)[0] + "/x.go": tc.code} {
				f, err := parser.ParseFile(fset, p, s, parser.SkipObjectResolution)
				require.NoError(t, err)
				files[p] = f
			}
			_, bad := tripleViolations(fset, files)
			require.Len(t, bad, len(tc.want), "%v", bad)
			for i, w := range tc.want {
				assert.Contains(t, bad[i], w)
			}
		})
	}
}
