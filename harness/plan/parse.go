package plan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
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
	if err := checkKeys(root.Content[0], reflect.TypeFor[Plan](), "plan"); err != nil {
		return nil, err
	}
	var p Plan
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

// checkKeys walks n against t's yaml keys and reports the first key that
// t does not have, with its line and the keys accepted there.
func checkKeys(n *yaml.Node, t reflect.Type, where string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[Sizes]():
		if n.Kind == yaml.MappingNode {
			return checkKeys(n, reflect.TypeFor[SizeRange](), where)
		}
		return nil
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			if err := checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", where, i)); err != nil {
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
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		f, ok := fields[k.Value]
		if !ok {
			return fmt.Errorf("line %d: %s: unknown key %q (accepted: %s)", k.Line, where, k.Value, strings.Join(names, ", "))
		}
		if dflt, ok := f.Tag.Lookup("zero"); ok && notPositive(n.Content[i+1], f.Type) {
			return fmt.Errorf("line %d: %s: %s %s: must be positive (accepted: a positive value, or leave %s out for %s)",
				k.Line, where, k.Value, n.Content[i+1].Value, k.Value, dflt)
		}
		if err := checkKeys(n.Content[i+1], f.Type, where+"."+k.Value); err != nil {
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
