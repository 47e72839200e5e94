// Package archtest checks the import arrows of the module against the rules
// stated in docs/architecture.md, so that the document cannot drift from the
// code.
//
// The rules are the fenced block tagged "imports" in that document: one line
// per package, "pkg: dep dep ...", module-relative paths; a dependency
// ending in "/..." allows the package and everything beneath it. A package
// with no line may import nothing of the module.
package archtest

import (
	"bufio"
	"fmt"
	"slices"
	"strings"
)

// Rules maps a package to the module packages it may import.
type Rules map[string][]string

// ParseRules reads the "imports" block of a Markdown document.
func ParseRules(md string) (Rules, error) {
	r := Rules{}
	in, found := false, false
	sc := bufio.NewScanner(strings.NewReader(md))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case !in && line == "```imports":
			in, found = true, true
		case in && line == "```":
			in = false
		case in && line != "" && !strings.HasPrefix(line, "#"):
			pkg, deps, ok := strings.Cut(line, ":")
			pkg = strings.TrimSpace(pkg)
			if !ok || pkg == "" {
				return nil, fmt.Errorf("line %d: want \"pkg: deps\", got %q", n, line)
			}
			if _, dup := r[pkg]; dup {
				return nil, fmt.Errorf("line %d: %s listed twice", n, pkg)
			}
			r[pkg] = strings.Fields(deps)
		}
	}
	if !found {
		return nil, fmt.Errorf("no ```imports block")
	}
	if in {
		return nil, fmt.Errorf("unterminated ```imports block")
	}
	return r, nil
}

func allows(pattern, dep string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return dep == base || strings.HasPrefix(dep, base+"/")
	}
	return pattern == dep
}

// Check compares a graph (package → module packages it imports) with the
// rules: every arrow must be allowed, every exact rule must still be an
// arrow, and every listed package must exist. It returns one line per
// violation, sorted.
func Check(graph map[string][]string, r Rules) []string {
	var bad []string
	for pkg, deps := range graph {
		for _, d := range deps {
			if !slices.ContainsFunc(r[pkg], func(p string) bool { return allows(p, d) }) {
				bad = append(bad, fmt.Sprintf("undeclared arrow %s -> %s", pkg, d))
			}
		}
	}
	for pkg, pats := range r {
		deps, ok := graph[pkg]
		if !ok {
			bad = append(bad, fmt.Sprintf("listed package %s does not exist", pkg))
			continue
		}
		for _, p := range pats {
			if !strings.HasSuffix(p, "/...") && !slices.Contains(deps, p) {
				bad = append(bad, fmt.Sprintf("stale arrow %s -> %s (no longer imported)", pkg, p))
			}
		}
	}
	slices.Sort(bad)
	return bad
}
