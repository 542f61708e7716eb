package ddbindex

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file holds Update, what Table.Update changes: the operations the
// caller records, and how they are read (which attribute each writes, and
// how) and rendered through the SDK's expression builder.

// An Update lists what [Table.Update] changes in an item: the SET, REMOVE,
// ADD and DELETE operations of an UpdateItem, each on a document path. Start
// one with [Set], [Remove], [Add] or [Delete] and chain the others:
//
//	ddbindex.Set("status", "closed").Remove("assignee").Add("reopened", 1)
//
// An Update is immutable, as the SDK's expression builders are: each method
// returns a new Update and leaves the one it is called on as it was, so an
// Update may be kept, extended in several ways and used for any number of
// calls. Mistakes (an empty or malformed path, a value that does not
// marshal) are reported when Table.Update builds the request, before it is
// sent, as errors matching [ErrInvalidWrite]. The zero Update has no
// operations, which Table.Update refuses.
//
// A path is a document path as [expression.Name] reads it: an attribute
// name, or names separated by dots and list elements as [n]
// ("meta.sizes[2]"). A dot that is part of a name is escaped with a
// backslash, as [expression.NameNoDotSplit] would take the name: `a\.b` is
// the attribute named "a.b" (and `\\` a backslash). Every name is written
// as a placeholder, so reserved words ("status", "name") and other
// characters need no care.
//
// Table.Update knows from an Update which attributes it writes, and how:
// that is how it recomputes the derived index keys whose components change,
// and refuses a change of the attributes the library owns.
type Update struct {
	ops []updateStep
}

// updateStep is one operation as recorded: resolved (checked, its value
// marshalled) by Update.resolve.
type updateStep struct {
	mode string // SET, REMOVE, ADD or DELETE
	path string
	arg  any // the value or operand of SET, ADD and DELETE
}

// Set returns an Update that sets path to value (SET path = value).
//
// value is marshalled as [Table.Put] marshals a model's fields
// (attributevalue's encoding, times refused when they do not read back as
// the same instant); a [types.AttributeValue] is used as it is. An
// [expression.OperandBuilder] is used as the SDK renders it, for the
// update functions:
//
//	ddbindex.Set("views", expression.Name("views").Plus(expression.Value(1)))
//	ddbindex.Set("tags", expression.ListAppend(expression.Name("tags"), expression.Value([]string{"vpn"})))
//	ddbindex.Set("first_seen", expression.IfNotExists(expression.Name("first_seen"), expression.Value(now)))
//
// A component of a derived index key may only be set to a value (not by
// a function, not at a nested path): see [Table.Update].
func Set(path string, value any) Update { return Update{}.Set(path, value) }

// Remove returns an Update that removes path (REMOVE path).
func Remove(path string) Update { return Update{}.Remove(path) }

// Add returns an Update that adds value to the number at path, or its
// elements to the set at path (ADD path value). value is marshalled as by
// [Set]; it may be an [expression.ValueBuilder], and no other operand. A set
// is given as its attribute value (a *types.AttributeValueMemberSS, NS or
// BS): attributevalue marshals a slice as a list.
func Add(path string, value any) Update { return Update{}.Add(path, value) }

// Delete returns an Update that deletes value's elements from the set at
// path (DELETE path value), value marshalled as by [Add]. It deletes no
// item: that is [Table.Delete].
func Delete(path string, value any) Update { return Update{}.Delete(path, value) }

// Set returns u with one more operation: path set to value, as [Set].
func (u Update) Set(path string, value any) Update {
	return u.with(updateStep{mode: "SET", path: path, arg: value})
}

// Remove returns u with one more operation: path removed, as [Remove].
func (u Update) Remove(path string) Update {
	return u.with(updateStep{mode: "REMOVE", path: path})
}

// Add returns u with one more operation: value added to path, as [Add].
func (u Update) Add(path string, value any) Update {
	return u.with(updateStep{mode: "ADD", path: path, arg: value})
}

// Delete returns u with one more operation: value's elements deleted from
// the set at path, as [Delete].
func (u Update) Delete(path string, value any) Update {
	return u.with(updateStep{mode: "DELETE", path: path, arg: value})
}

// with returns u with op appended, on an array of its own: u's is never
// written, so updates built from the same u do not share their operations.
func (u Update) with(op updateStep) Update {
	return Update{ops: append(slices.Clip(u.ops), op)}
}

// updateOp is one operation of an Update, resolved: what it writes and the
// SDK operands it is rendered with.
type updateOp struct {
	mode   string // SET, REMOVE, ADD or DELETE
	path   string
	name   expression.NameBuilder // path, for the SDK
	attr   string                 // the top-level attribute it writes
	nested bool                   // it writes inside attr (a path with . or [ ])
	// value is the value of a SET to a value (a plain value or an
	// expression.ValueBuilder); nil for any other operation.
	value types.AttributeValue
	// setTo is what SET sets the path to.
	setTo expression.OperandBuilder
	// arg is the value ADD adds or DELETE deletes.
	arg expression.ValueBuilder
	// elems are the path's elements (see pathElems).
	elems []string
}

// resolve checks u's operations and resolves them: each path's attribute,
// each value marshalled and checked for Numbers DynamoDB would refuse.
func (u Update) resolve() ([]updateOp, error) {
	if len(u.ops) == 0 {
		return nil, errors.New("the update has no operations")
	}
	out := make([]updateOp, len(u.ops))
	for i, s := range u.ops {
		op, err := s.resolve()
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", s.mode, s.path, err)
		}
		out[i] = op
	}
	if err := checkOverlaps(out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkOverlaps refuses what DynamoDB refuses in one update expression: two
// operations on one document path or on a path and a path inside it (they
// overlap), or on a path as a map's and as a list's (they conflict). List
// indexes compare as numbers: [1] and [01] are one element.
func checkOverlaps(ops []updateOp) error {
	for i, a := range ops {
		for _, b := range ops[:i] {
			n := min(len(a.elems), len(b.elems))
			same := 0
			for same < n && a.elems[same] == b.elems[same] {
				same++
			}
			switch {
			case same == n:
				return fmt.Errorf("%s %q and %s %q: the paths overlap (one is the other, or inside it), and DynamoDB refuses two operations on one path in an update: make them one",
					b.mode, b.path, a.mode, a.path)
			case a.elems[same][0] != b.elems[same][0]:
				return fmt.Errorf("%s %q and %s %q: the paths overlap, one taking %s as a map and the other as a list, and DynamoDB refuses that",
					b.mode, b.path, a.mode, a.path, strings.Join(a.elemNames(same), "."))
			}
		}
	}
	return nil
}

// elemNames lists the names of the first n elements of op's path, a list
// index with the name before it.
func (op updateOp) elemNames(n int) []string {
	var out []string
	for _, e := range op.elems[:n] {
		if e[0] == '[' {
			out[len(out)-1] += e + "]"
			continue
		}
		out = append(out, e[1:])
	}
	return out
}

// pathElems returns the elements of a path split by splitPath as the SDK's
// expression builder reads them, each a name ("." and the name) or a list
// index ("[" and the index without leading zeros). The builder reads the
// indexes of an element that ends with "]" and takes any other whole.
func pathElems(words []string) []string {
	var out []string
	for _, w := range words {
		name, idx, ok := strings.Cut(w, "[")
		if !ok || !strings.HasSuffix(w, "]") {
			out = append(out, "."+w)
			continue
		}
		out = append(out, "."+name)
		for _, n := range strings.Split(strings.TrimSuffix(idx, "]"), "][") {
			if n = strings.TrimLeft(n, "0"); n == "" {
				n = "0"
			}
			out = append(out, "["+n)
		}
	}
	return out
}

func (s updateStep) resolve() (updateOp, error) {
	op := updateOp{mode: s.mode, path: s.path}
	elems, err := splitPath(s.path)
	if err != nil {
		return op, err
	}
	op.name = expression.NameNoDotSplit(elems[0])
	for _, e := range elems[1:] {
		op.name = op.name.AppendName(expression.NameNoDotSplit(e))
	}
	if _, err := op.name.BuildOperand(); err != nil {
		return op, fmt.Errorf("not a document path (attribute names separated by dots, list elements as [n]): %w", err)
	}
	op.elems = pathElems(elems)
	op.attr, _, _ = strings.Cut(elems[0], "[")
	op.nested = len(elems) > 1 || op.attr != elems[0]
	if s.mode == "REMOVE" {
		return op, nil
	}
	var values []types.AttributeValue // every value the operation writes
	switch arg := s.arg.(type) {
	case expression.ValueBuilder:
		av, err := builtValue(arg)
		if err != nil {
			return op, err
		}
		values = []types.AttributeValue{av}
	case expression.OperandBuilder:
		if s.mode != "SET" {
			return op, fmt.Errorf("%s takes a value, not %T", s.mode, arg)
		}
		vs, err := operandValues(arg)
		if err != nil {
			return op, err
		}
		values, op.setTo = vs, arg
	default:
		av, err := marshalValue(arg)
		if err != nil {
			return op, err
		}
		values = []types.AttributeValue{av}
	}
	for _, v := range values {
		if rv := reflect.ValueOf(v); !rv.IsValid() || rv.Kind() == reflect.Pointer && rv.IsNil() {
			return op, fmt.Errorf("a nil %T", v)
		}
		if err := checkValue(v, s.path); err != nil {
			return op, err
		}
	}
	switch {
	case op.setTo != nil: // SET to an operand: no value to key with
	case s.mode == "SET":
		op.value = values[0]
		op.setTo = expression.Value(op.value)
	default:
		op.arg = expression.Value(values[0])
	}
	return op, nil
}

// splitPath splits a path into the names of its elements, each with its
// list indexes ("sizes[2]"): at each dot that is not escaped by a
// backslash.
func splitPath(path string) ([]string, error) {
	if path == "" {
		return nil, errors.New("empty path")
	}
	var elems []string
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '\\':
			if i+1 == len(path) || (path[i+1] != '.' && path[i+1] != '\\') {
				return nil, errors.New(`a backslash escapes a dot or a backslash only`)
			}
			i++
			b.WriteByte(path[i])
		case c == '.':
			elems = append(elems, b.String())
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	elems = append(elems, b.String())
	for _, e := range elems {
		if e == "" || e[0] == '[' {
			return nil, errors.New("not a document path (attribute names separated by dots, list elements as [n]): an empty name")
		}
	}
	return elems, nil
}

// marshalValue marshals a value of an Update as Put marshals a model's
// fields.
func marshalValue(v any) (types.AttributeValue, error) {
	if av, ok := v.(types.AttributeValue); ok {
		return av, nil
	}
	av, err := attributevalue.MarshalWithOptions(v, marshalOptions)
	if err != nil {
		return nil, err
	}
	if av == nil {
		return nil, fmt.Errorf("a %T marshals to no attribute value", v)
	}
	return av, nil
}

// operandValues returns the values an operand holds, as the SDK builds
// them (an expression's values map, not its text).
func operandValues(o expression.OperandBuilder) ([]types.AttributeValue, error) {
	expr, err := expression.NewBuilder().WithUpdate(expression.Set(expression.Name("v"), o)).Build()
	if err != nil {
		return nil, err
	}
	values := expr.Values()
	out := make([]types.AttributeValue, 0, len(values))
	for _, k := range slices.Sorted(maps.Keys(values)) {
		out = append(out, values[k])
	}
	return out, nil
}

// builtValue returns the value a ValueBuilder holds, as the SDK marshals
// it.
func builtValue(v expression.ValueBuilder) (types.AttributeValue, error) {
	values, err := operandValues(v)
	if err != nil {
		return nil, err
	}
	if len(values) != 1 {
		return nil, fmt.Errorf("a value builder built %d values", len(values))
	}
	return values[0], nil
}

// renderOps adds the operations to ub, through the SDK's builder methods.
func renderOps(ub expression.UpdateBuilder, ops []updateOp) expression.UpdateBuilder {
	for _, op := range ops {
		name := op.name
		switch op.mode {
		case "SET":
			ub = ub.Set(name, op.setTo)
		case "REMOVE":
			ub = ub.Remove(name)
		case "ADD":
			ub = ub.Add(name, op.arg)
		case "DELETE":
			ub = ub.Delete(name, op.arg)
		}
	}
	return ub
}
