// Package nilwalk calls a package's exported functions and methods with
// zero and nil arguments, and fails the test for each call that panics, so
// that no value a caller can pass makes the library panic. It also lists a
// package's exported functions and methods from its source, so that a test
// fails when one of them is not walked.
//
// A test makes a [Walker], gives it each function and method (a method as a
// method expression, such as (*pkg.Table[M]).Get, generic ones instantiated
// with a concrete type), and then calls [Walker.Covers] with the package's
// directory:
//
//	var w nilwalk.Walker
//	w.Walk(t, pkg.New[Model])
//	w.Walk(t, (*pkg.Table[Model]).Get)
//	w.Covers(t, ".")
package nilwalk

import (
	"context"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Walker calls functions with zero and nil arguments. The zero value is
// ready to use; it is not safe for concurrent use.
type Walker struct {
	// Context returns the context given to each context.Context parameter.
	// Default: context.Background. A context that is already canceled
	// keeps a method that would wait from waiting.
	Context func() context.Context
	// Values are more candidates for the parameters of their type (see
	// Walk), such as a handle made by a constructor from nil arguments,
	// whose methods are then walked with it as receiver, or an item with
	// its key set, for that handle's writes to reach its client.
	Values []any
	// Err, when set, is asked about every non-nil error a call returns; a
	// false answer fails the test, e.g. for an error that has no code.
	Err func(err error) bool

	walked map[string]string // name → how it was walked ("" when called)
}

// Walk calls fn, a function or method expression, with every combination
// of its parameters' candidate values:
//
//   - the zero value (nil for pointers, slices, maps, interfaces and
//     funcs), and none for the variadic parameter;
//   - for a pointer to a struct, a pointer to a zero struct too, so that a
//     method gets both a nil and a zero receiver;
//   - for the variadic parameter, one zero argument too (such as a nil
//     option function);
//   - each of w.Values that has the parameter's type, or implements it
//     when it is an interface with methods.
//
// A context.Context parameter gets w.Context() alone. The iterators fn
// returns (functions that take a yield function) are ranged over too. A
// panic fails the test with fn's name and the arguments. The name the
// coverage check knows fn by is its source name: "Func" or "Type.Method".
func (w *Walker) Walk(t testing.TB, fn any) {
	t.Helper()
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		t.Fatalf("nilwalk: Walk given %T, not a function", fn)
		return
	}
	name := funcName(v)
	w.record(name, "")
	lists, err := w.argLists(v.Type())
	if err != nil {
		t.Errorf("nilwalk: %s: %v", name, err)
		return
	}
	for _, args := range lists {
		w.call(t, name, v, args)
	}
}

// Skip records name as walked without calling it, for a function that
// cannot be called in a test process (one that exits it, say); why says
// what covers it instead.
func (w *Walker) Skip(t testing.TB, name, why string) {
	t.Helper()
	if why == "" {
		t.Fatalf("nilwalk: Skip of %s without a reason", name)
	}
	w.record(name, why)
}

func (w *Walker) record(name, how string) {
	if w.walked == nil {
		w.walked = map[string]string{}
	}
	w.walked[name] = how
}

// Covers fails the test for each exported function and method declared
// in the non-test Go files of the package in dir that was neither walked
// nor skipped, and for each name walked that the package does not declare
// (a function of another package, or a closure).
func (w *Walker) Covers(t testing.TB, dir string) {
	t.Helper()
	names, err := Exported(dir)
	if err != nil {
		t.Fatalf("nilwalk: %v", err)
		return
	}
	for _, n := range names {
		if _, ok := w.walked[n]; !ok {
			t.Errorf("nilwalk: exported %s of %s is not walked: add it to the test", n, dir)
		}
	}
	for n := range w.walked {
		if !slices.Contains(names, n) {
			t.Errorf("nilwalk: walked %s, which %s does not declare as an exported function or method", n, dir)
		}
	}
}

// Exported returns the exported functions and the exported methods of
// exported types declared in the Go files of the package in dir that
// build for the current platform, test files excepted, sorted: "Func" for
// a function, "Type.Method" for a method (without type parameters or
// pointer).
func Exported(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(dir, n); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() {
				continue
			}
			if fd.Recv == nil {
				names = append(names, fd.Name.Name)
				continue
			}
			if recv := recvName(fd.Recv.List[0].Type); ast.IsExported(recv) {
				names = append(names, recv+"."+fd.Name.Name)
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// recvName is the name of a receiver's type: T of T, *T, T[P] or *T[P].
func recvName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// funcName turns the runtime's name of a function ("path/pkg.New[...]",
// "path/pkg.(*Table[...]).Get", "path/pkg.Query[...].Page") into its
// source name ("New", "Table.Get", "Query.Page").
func funcName(v reflect.Value) string {
	full := runtime.FuncForPC(v.Pointer()).Name()
	if i := strings.LastIndex(full, "/"); i >= 0 {
		full = full[i+1:]
	}
	_, name, _ := strings.Cut(full, ".") // drop the package name
	var b strings.Builder
	depth := 0
	for _, r := range name {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth > 0, r == '(', r == ')', r == '*':
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// maxLists bounds the argument lists of one function.
const maxLists = 4096

// argLists returns the argument lists fn's type is called with: every
// combination of each parameter's candidates.
func (w *Walker) argLists(ft reflect.Type) ([][]reflect.Value, error) {
	lists := [][]reflect.Value{nil}
	for i := range ft.NumIn() {
		cands := w.candidates(ft.In(i), ft.IsVariadic() && i == ft.NumIn()-1)
		if len(lists)*len(cands) > maxLists {
			return nil, fmt.Errorf("more than %d argument lists: give fewer Values", maxLists)
		}
		next := make([][]reflect.Value, 0, len(lists)*len(cands))
		for _, l := range lists {
			for _, c := range cands {
				next = append(next, append(slices.Clip(l), c))
			}
		}
		lists = next
	}
	return lists, nil
}

// candidates returns the values a parameter of type pt is called with: its
// zero value; a pointer to a zero struct for a pointer to a struct; one
// zero argument for the variadic parameter; each of w.Values that fits.
func (w *Walker) candidates(pt reflect.Type, variadic bool) []reflect.Value {
	out := []reflect.Value{w.zeroOf(pt)}
	switch {
	case pt == ctxType:
		return out
	case variadic:
		s := reflect.MakeSlice(pt, 1, 1)
		s.Index(0).Set(w.zeroOf(pt.Elem()))
		return append(out, s)
	case pt.Kind() == reflect.Pointer && pt.Elem().Kind() == reflect.Struct:
		out = append(out, reflect.New(pt.Elem()))
	}
	for _, x := range w.Values {
		if xv := reflect.ValueOf(x); fits(xv, pt) {
			a := reflect.New(pt).Elem()
			a.Set(xv)
			out = append(out, a)
		}
	}
	return out
}

var ctxType = reflect.TypeFor[context.Context]()

// fits reports whether x is given for a parameter of type pt: x has that
// type, or pt is an interface with methods (not context.Context) that x
// implements.
func fits(x reflect.Value, pt reflect.Type) bool {
	if !x.IsValid() {
		return false
	}
	if x.Type() == pt {
		return true
	}
	return pt.Kind() == reflect.Interface && pt.NumMethod() > 0 && pt != ctxType && x.Type().Implements(pt)
}

// zeroOf is the zero value of t, or the walker's context for a context.
func (w *Walker) zeroOf(t reflect.Type) reflect.Value {
	if t == ctxType {
		ctx := context.Background()
		if w.Context != nil {
			ctx = w.Context()
		}
		v := reflect.New(t).Elem()
		v.Set(reflect.ValueOf(ctx))
		return v
	}
	return reflect.Zero(t)
}

// call calls fn with args, recovering a panic, then ranges over the
// iterators it returned and checks the errors.
func (w *Walker) call(t testing.TB, name string, fn reflect.Value, args []reflect.Value) {
	t.Helper()
	desc := describe(args)
	var out []reflect.Value
	if p := catch(func() {
		if fn.Type().IsVariadic() {
			out = fn.CallSlice(args)
		} else {
			out = fn.Call(args)
		}
	}); p != nil {
		t.Errorf("nilwalk: %s(%s) panicked: %v", name, desc, p)
		return
	}
	for _, r := range out {
		w.result(t, name, desc, r)
	}
}

// result checks one value a call returned: an error with w.Err, an
// iterator by ranging over it.
func (w *Walker) result(t testing.TB, name, desc string, r reflect.Value) {
	t.Helper()
	if r.Type() == errType {
		if err, _ := r.Interface().(error); err != nil && w.Err != nil && !w.Err(err) {
			t.Errorf("nilwalk: %s(%s) returned an error that the check refuses: %v (%T)", name, desc, err, err)
		}
		return
	}
	if !isIterator(r.Type()) || r.IsNil() {
		return
	}
	yt := r.Type().In(0)
	const most = 100 // a zero query might iterate on: stop after most values
	n := 0
	yield := reflect.MakeFunc(yt, func(vals []reflect.Value) []reflect.Value {
		for _, v := range vals {
			w.result(t, name+" (iterated)", desc, v)
		}
		n++
		return []reflect.Value{reflect.ValueOf(n < most)}
	})
	if p := catch(func() { r.Call([]reflect.Value{yield}) }); p != nil {
		t.Errorf("nilwalk: ranging over what %s(%s) returned panicked: %v", name, desc, p)
	}
}

var errType = reflect.TypeFor[error]()

// isIterator reports whether t is func(yield func(...) bool), as iter.Seq
// and iter.Seq2 are.
func isIterator(t reflect.Type) bool {
	if t.Kind() != reflect.Func || t.NumIn() != 1 || t.NumOut() != 0 {
		return false
	}
	y := t.In(0)
	return y.Kind() == reflect.Func && y.NumOut() == 1 && y.Out(0).Kind() == reflect.Bool
}

// catch runs f and returns what it panicked with, or nil.
func catch(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// describe renders an argument list for a failure message.
func describe(args []reflect.Value) string {
	parts := make([]string, len(args))
	for i, a := range args {
		switch {
		case a.Type() == ctxType:
			parts[i] = "ctx"
		case a.Kind() == reflect.Interface && !a.IsNil():
			parts[i] = fmt.Sprintf("%T value", a.Interface())
		case a.Kind() == reflect.Slice && a.Len() == 1 && a.Index(0).IsZero():
			parts[i] = "[zero]"
		case a.Kind() == reflect.Slice && a.Len() > 0:
			parts[i] = fmt.Sprintf("%v", a.Interface())
		case a.Kind() == reflect.Pointer && !a.IsNil() && a.Elem().IsZero():
			parts[i] = "&" + a.Type().Elem().String() + "{}"
		case a.IsZero() && (a.Kind() == reflect.Pointer || a.Kind() == reflect.Interface || a.Kind() == reflect.Slice || a.Kind() == reflect.Map || a.Kind() == reflect.Func):
			parts[i] = "nil"
		case a.IsZero():
			parts[i] = "zero " + a.Type().String()
		default:
			parts[i] = a.Type().String() + " value"
		}
	}
	return strings.Join(parts, ", ")
}
