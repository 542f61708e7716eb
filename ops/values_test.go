package ops

import (
	"bytes"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/schema"
)

func TestSplitTuple(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"":             {""},
		"TEAM-7":       {"TEAM-7"},
		"open,2":       {"open", "2"},
		`a\,b,c`:       {"a,b", "c"},
		`back\\slash,`: {`back\slash`, ""},
	} {
		got, err := splitTuple(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := splitTuple(`lone\`)
	require.ErrorContains(t, err, "lone backslash")
}

// rank is a key component type with its own key text.
type rank struct{ n int }

func (r rank) KeyText() (string, error) { return strings.Repeat("I", r.n), nil }
func (r *rank) ParseKeyText(s string) error {
	if s == "" {
		panic("an empty rank")
	}
	if strings.Trim(s, "I") != "" {
		return errors.New("not a rank")
	}
	r.n = len(s)
	return nil
}

// TestParseValue reads each component type the command line can give, and
// writes it back as it reads it.
func TestParseValue(t *testing.T) {
	t.Parallel()
	comp := func(v any) ddbindex.KeyComponent {
		return ddbindex.KeyComponent{Attr: "a", Type: reflect.TypeOf(v)}
	}
	type named string
	cases := []struct {
		text string
		want any
	}{
		{"TEAM-7", "TEAM-7"},
		{"x", named("x")},
		{"-42", int64(-42)},
		{"7", int8(7)},
		{"18446744073709551615", uint64(18446744073709551615)},
		{"2.5", 2.5},
		{"2026-12-01T09:00:00.5Z", time.Date(2026, 12, 1, 9, 0, 0, 5e8, time.UTC)},
		{"00ff", []byte{0, 0xff}},
		{"III", rank{3}},
		{"10.0.0.1", netip.MustParseAddr("10.0.0.1")},
	}
	for _, c := range cases {
		got, err := parseValue(c.text, comp(c.want))
		require.NoError(t, err, c.text)
		require.Equal(t, c.want, got, c.text)
		require.Equal(t, c.text, formatValue(got), "formatValue writes what parseValue reads")
	}
	// A date is midnight UTC; formatValue writes it in full.
	got, err := parseValue("2026-12-01", comp(time.Time{}))
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), got)

	for _, c := range []struct {
		text string
		typ  any
		want string
	}{
		{"128", int8(0), "want a decimal integer in range"},
		{"-1", uint(0), "0 or more"},
		{"x", 1.5, "want a decimal number"},
		{"yesterday", time.Time{}, "RFC 3339"},
		{"zz", []byte(nil), "hexadecimal"},
		{"IIx", rank{}, "not a rank"},
		{"1", struct{}{}, "cannot give values of this type"},
		{"", rank{}, "its parser panicked"},
	} {
		_, err := parseValue(c.text, comp(c.typ))
		require.ErrorContains(t, err, c.want, c.text)
	}
}

func TestParseTuple(t *testing.T) {
	t.Parallel()
	comps := []ddbindex.KeyComponent{{Attr: "status", Type: reflect.TypeFor[string]()}, {Attr: "prio", Type: reflect.TypeFor[int]()}}
	got, err := parseTuple("open,2", comps, "--eq")
	require.NoError(t, err)
	require.Equal(t, []any{"open", 2}, got)
	got, err = parseTuple("open", comps, "--eq")
	require.NoError(t, err)
	require.Equal(t, []any{"open"}, got, "leading components only")
	_, err = parseTuple("open,2,x", comps, "--eq")
	require.ErrorContains(t, err, `--eq "open,2,x" has 3 values; the key has 2 components (status (string), prio (int))`)
	_, err = parseTuple("open,high", comps, "--eq")
	require.ErrorContains(t, err, `--eq "open,high": prio (int): want a decimal integer`)
	require.Equal(t, `a\,b,3`, formatTuple([]any{"a,b", 3}))
}

func TestCompactRuns(t *testing.T) {
	t.Parallel()
	pad := strings.Repeat(`\U0010ffff`, 251)
	require.Equal(t, `_sk="open#a1#t-05\U0010ffff×251", id="t-06"`, compactRuns(`_sk="open#a1#t-05`+pad+`", id="t-06"`))
	require.Equal(t, `"a\U0010ffff\U0010ffff\U0010ffffb"`, compactRuns(`"a\U0010ffff\U0010ffff\U0010ffffb"`), "three stay")
	require.Equal(t, `"\x00×4\u00e9"`, compactRuns(`"\x00\x00\x00\x00\u00e9"`))
	require.Equal(t, "no escapes", compactRuns("no escapes"))
}

// TestWritePrepareEvent: a poll that finds the table (and GSI) ACTIVE is
// the wait's end and prints nothing; one still waiting prints what it
// waits for.
func TestWritePrepareEvent(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	writePrepareEvent(&b, "Ticket", schema.Event{Step: "created table t", Table: "t", TableStatus: types.TableStatusActive})
	writePrepareEvent(&b, "Ticket", schema.Event{Step: "created GSI g", Table: "t", Index: "g", TableStatus: types.TableStatusActive, IndexStatus: types.IndexStatusActive})
	require.Empty(t, b.String())
	writePrepareEvent(&b, "Ticket", schema.Event{Step: "created GSI g", Table: "t", Index: "g", TableStatus: types.TableStatusUpdating,
		IndexStatus: types.IndexStatusCreating, Backfilling: true, ItemCount: 1200, Elapsed: 90 * time.Second})
	writePrepareEvent(&b, "Ticket", schema.Event{Step: "created table t", Table: "t", Elapsed: time.Second})
	writePrepareEvent(&b, "Ticket", schema.Event{Step: "created GSI h", Table: "t", Index: "h", TableStatus: types.TableStatusActive,
		IndexStatus: types.IndexStatusActive, Busy: errors.New("LimitExceededException")})
	require.Equal(t, `Ticket: created GSI g: table UPDATING, GSI g CREATING (backfilling; 1200 items when DynamoDB last counted) after 1m30s
Ticket: created table t: table (not yet described) after 1s
Ticket: created GSI h: table ACTIVE, GSI h ACTIVE; busy, sending it again: LimitExceededException after 0s
`, b.String())
}
