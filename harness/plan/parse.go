package plan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Parse reads a plan from YAML. Unknown keys are errors (with their
// line and the keys accepted there): a misspelt key silently ignored would
// measure something else than intended.
func Parse(src []byte) (*Plan, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, oneLine(err)
	}
	if len(root.Content) == 0 {
		return nil, errors.New("the plan is empty")
	}
	var w keyWalk
	if err := w.check(root.Content[0], reflect.TypeFor[Plan](), "plan"); err != nil {
		return nil, err
	}
	var p Plan
	if w.renamed {
		// Flag-style keys were renamed in the tree: decode the tree
		// (its lines are the source's), which check has already
		// checked key by key.
		if err := root.Content[0].Decode(&p); err != nil {
			return nil, oneLine(err)
		}
		return &p, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil && err != io.EOF {
		return nil, oneLine(err)
	}
	// A plan is one document: what follows a "---" would be silently
	// left unmeasured. An empty trailing document is harmless.
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, oneLine(err)
		}
		if len(doc.Content) == 1 && doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].ShortTag() == "!!null" {
			continue
		}
		return nil, fmt.Errorf("line %d: plan: a second YAML document (accepted: one document; merge its blocks into the first, or remove the \"---\")", doc.Line)
	}
	return &p, nil
}

// oneLine folds yaml.v3's multi-line errors into one line.
func oneLine(err error) error {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	s = strings.TrimPrefix(s, "unmarshal errors:\n")
	return errors.New(strings.Join(strings.Fields(s), " "))
}

// flagKeys are the command line's names for plan keys, accepted in a plan
// too: a plan written from `distbench sweep --help` should work as
// written. Dashes are read as underscores first (time-budget is
// time_budget).
var flagKeys = map[string]string{
	"strategy": "strategies", "collective": "collectives", "dtype": "dtypes", "op": "ops",
	"link": "links", "opt": "options", "device": "devices",
}

// rangeFlagKeys are the flags of a size range, accepted in a collectives
// block in place of sizes: {min, max, factor, step}.
var rangeFlagKeys = map[string]string{"minbytes": "min", "maxbytes": "max", "stepfactor": "factor", "stepbytes": "step"}

// keyWalk checks a plan's keys, renaming flag-style ones in place.
type keyWalk struct {
	renamed bool // a key was renamed: decode the tree, not the source
}

// canonical is the plan's own name for key k among fields, or "".
func canonical(k string, fields map[string]reflect.StructField) string {
	if _, ok := fields[k]; ok {
		return k
	}
	u := strings.ReplaceAll(k, "-", "_")
	if _, ok := fields[u]; ok {
		return u
	}
	if c, ok := flagKeys[u]; ok {
		if _, ok := fields[c]; ok {
			return c
		}
	}
	return ""
}

// sizeFlags turns a collectives block's minbytes/maxbytes/stepfactor/
// stepbytes into its sizes range.
func (w *keyWalk) sizeFlags(n *yaml.Node, where string) error {
	rng := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	var sizesLine int
	var first string // the first range flag, as written
	kept := n.Content[:0:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "sizes" {
			sizesLine = k.Line
		}
		if rk, ok := rangeFlagKeys[k.Value]; ok {
			rng.Content = append(rng.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: rk, Line: k.Line, Column: k.Column}, v)
			if rng.Line == 0 {
				rng.Line, rng.Column, first = k.Line, k.Column, k.Value
			}
			continue
		}
		kept = append(kept, k, v)
	}
	if len(rng.Content) == 0 {
		return nil
	}
	if sizesLine != 0 {
		return fmt.Errorf("line %d: %s: sizes and %s: give the sizes one way (accepted: sizes, or minbytes/maxbytes with stepfactor or stepbytes)", rng.Line, where, first)
	}
	key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "sizes", Line: rng.Line, Column: rng.Column}
	n.Content = append(kept, key, rng)
	w.renamed = true
	return nil
}

// check walks n against t's yaml keys and reports the first key that t
// does not have, with its line and the keys accepted there. A key in the
// command line's spelling (flagKeys, rangeFlagKeys) is renamed to the
// plan's.
func (w *keyWalk) check(n *yaml.Node, t reflect.Type, where string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[Sizes]():
		if n.Kind == yaml.MappingNode {
			return w.check(n, reflect.TypeFor[SizeRange](), where)
		}
		return nil
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			if err := w.check(c, t.Elem(), fmt.Sprintf("%s[%d]", where, i)); err != nil {
				return err
			}
		}
		return nil
	case t.Kind() != reflect.Struct || n.Kind != yaml.MappingNode:
		return nil
	}
	fields := map[string]reflect.StructField{}
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = f
		names = append(names, name)
	}
	if t == reflect.TypeFor[CollectiveBlock]() {
		if err := w.sizeFlags(n, where); err != nil {
			return err
		}
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		name := canonical(k.Value, fields)
		if name == "" {
			return fmt.Errorf("line %d: %s: unknown key %q (accepted: %s)", k.Line, where, k.Value, strings.Join(names, ", "))
		}
		if line, dup := seen[name]; dup {
			return fmt.Errorf("line %d: %s: %q is %s, given already at line %d (accepted: one of %s and its command-line name)", k.Line, where, k.Value, name, line, name)
		}
		seen[name] = k.Line
		if name != k.Value {
			k.Value, w.renamed = name, true
		}
		f := fields[name]
		if dflt, ok := f.Tag.Lookup("zero"); ok && notPositive(n.Content[i+1], f.Type) {
			return fmt.Errorf("line %d: %s: %s %s: must be positive (accepted: a positive value, or leave %s out for %s)",
				k.Line, where, k.Value, n.Content[i+1].Value, k.Value, dflt)
		}
		if err := w.check(n.Content[i+1], f.Type, where+"."+k.Value); err != nil {
			return err
		}
	}
	return nil
}

// notPositive reports whether v decodes as a number of type t (an integer,
// a float or a duration) that is zero or less. Fields tagged `zero:"..."`
// read zero as "use the default", so an explicit zero (timeout: 0s, which
// the CLI refuses) would otherwise silently become the default.
func notPositive(v *yaml.Node, t reflect.Type) bool {
	if v.Kind != yaml.ScalarNode {
		return false
	}
	x := reflect.New(t)
	if v.Decode(x.Interface()) != nil {
		return false // the decoder reports what is wrong with it
	}
	switch x = x.Elem(); x.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return x.Int() <= 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return x.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return !(x.Float() > 0)
	}
	return false
}

// Marshal writes the plan as YAML, the form a resumed sweep reads back.
func (p *Plan) Marshal() ([]byte, error) {
	return yaml.Marshal(p)
}
