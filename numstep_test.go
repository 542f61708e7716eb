package ddbindex

import (
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stretchr/testify/require"
)

// ratOf reads a Number as an exact rational.
func ratOf(t *testing.T, s string) *big.Rat {
	t.Helper()
	r, ok := new(big.Rat).SetString(s)
	require.True(t, ok, "%q is not a number", s)
	return r
}

func TestNumberStep(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, below, above string }{
		{"5", "4.9999999999999999999999999999999999999E0", "5.0000000000000000000000000000000000001E0"},
		{"1", "9.9999999999999999999999999999999999999E-1", "1.0000000000000000000000000000000000001E0"},
		{"-1", "-1.0000000000000000000000000000000000001E0", "-9.9999999999999999999999999999999999999E-1"},
		{"0", "-1E-130", "1E-130"},
		{"1E-130", "0", "1.0000000000000000000000000000000000001E-130"},
		{"-1E-130", "-1.0000000000000000000000000000000000001E-130", "0"},
		{"120", "1.1999999999999999999999999999999999999E2", "1.2000000000000000000000000000000000001E2"},
		{"0.05", "4.9999999999999999999999999999999999999E-2", "5.0000000000000000000000000000000000001E-2"},
		{"9.9999999999999999999999999999999999999E+125", "9.9999999999999999999999999999999999998E125", ""},
		{"-9.9999999999999999999999999999999999999E+125", "", "-9.9999999999999999999999999999999999998E125"},
		{"99999999999999999999999999999999999999", "9.9999999999999999999999999999999999998E37", "1E38"},
	}
	for _, c := range cases {
		got, ok := numberStep(c.in, false)
		require.Equal(t, c.below != "", ok, "below %s", c.in)
		require.Equal(t, c.below, got, "below %s", c.in)
		got, ok = numberStep(c.in, true)
		require.Equal(t, c.above != "", ok, "above %s", c.in)
		require.Equal(t, c.above, got, "above %s", c.in)
	}
	for _, bad := range []string{"", "-", "e5", "1e", "1.2.3", "abc", "1" + strings.Repeat("1", 38)} {
		_, ok := numberStep(bad, false)
		require.False(t, ok, "%q", bad)
	}
}

// TestNumberStepNothingBetween: for random Numbers of every size, the step
// lies on the right side and exactly one unit of the 38th significant digit
// away, where the smaller magnitude of the two sits: no Number DynamoDB can
// store lies strictly between them.
func TestNumberStepNothingBetween(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	ten := big.NewRat(10, 1)
	pow := func(k int) *big.Rat {
		r := big.NewRat(1, 1)
		for range max(k, -k) {
			r.Mul(r, ten)
		}
		if k < 0 {
			r.Inv(r)
		}
		return r
	}
	for i := range 5000 {
		var x string
		switch i % 4 {
		case 0:
			x = strconv.FormatInt(rng.Int64()>>rng.IntN(63)*int64(1-2*rng.IntN(2)), 10)
		case 1:
			x = strconv.FormatFloat(rng.NormFloat64()*float64(rng.IntN(1000000)+1), 'g', -1, 64)
		case 2:
			x = strconv.FormatFloat((rng.Float64()-0.5)*1e-100, 'g', -1, 64)
		default:
			n := rng.IntN(38) + 1
			d := []byte{byte('1' + rng.IntN(9))}
			for range n - 1 {
				d = append(d, byte('0'+rng.IntN(10)))
			}
			x = string(d) + "E" + strconv.Itoa(rng.IntN(200)-100-n+1)
		}
		if x == "0" {
			continue
		}
		xr := ratOf(t, x)
		for _, desc := range []bool{false, true} {
			s, ok := numberStep(x, desc)
			require.True(t, ok, "%s desc=%v", x, desc)
			sr := ratOf(t, s)
			if desc {
				require.Equal(t, 1, sr.Cmp(xr), "%s above %s", s, x)
			} else {
				require.Equal(t, -1, sr.Cmp(xr), "%s below %s", s, x)
			}
			if sr.Sign() != xr.Sign() {
				continue // zero in between is checked by the table
			}
			m := new(big.Rat).Abs(xr)
			if a := new(big.Rat).Abs(sr); a.Cmp(m) < 0 {
				m = a
			}
			k := 0 // 10^(k-1) <= m < 10^k
			for m.Cmp(pow(k)) >= 0 {
				k++
			}
			for m.Cmp(pow(k-1)) < 0 {
				k--
			}
			gap := new(big.Rat).Sub(xr, sr)
			gap.Abs(gap)
			require.Equal(t, 0, gap.Cmp(pow(k-numberDigits)), "%s next to %s: gap %s", s, x, gap.FloatString(140))
		}
	}
}

type skbLong struct {
	_    TableSpec `ddbindex:"skb_long"`
	_    IndexSpec `ddbindex:"by_k,type=gsi"`
	P    string    `dynamodbav:"p" ddbindex:"pk;by_k.pk"`
	N    int64     `dynamodbav:"n" ddbindex:"sk;by_k.sk:1"`
	Kind string    `dynamodbav:"kind" ddbindex:"by_k.sk:0"`
}

// TestStartKeyBeforeNeverAtLastItem: the start key just before the next
// item never lands on the page's last item's own sort key value. A derived
// key at DynamoDB's 1,024-byte limit has no room for the highest characters
// after its predecessor, which is then the previous item's key itself when
// the two differ in their last byte by one; where the server places a start
// key among entries of one index key value is its own tie order, so such a
// start key could return the last item again.
func TestStartKeyBeforeNeverAtLastItem(t *testing.T) {
	t.Parallel()
	tb, err := New[skbLong](nil)
	require.NoError(t, err)
	d := curxDef(t, tb, "by_k")
	long := strings.Repeat("x", 1019) + "z"
	refused := 0
	for n := int64(-40); n < 120; n++ {
		for _, desc := range []bool{false, true} {
			at, next := skbLong{P: "t", N: n, Kind: long}, skbLong{P: "t", N: n + 1, Kind: long}
			if desc {
				at, next = next, at
			}
			pa, pn := curxPos(t, tb, d, at), curxPos(t, tb, d, next)
			ordAt, err := d.sk.ordered(d.textOf(pa))
			require.NoError(t, err)
			ord, err := d.sk.ordered(d.textOf(pn))
			require.NoError(t, err)
			if len(ordAt) > maxSortKeyBytes || len(ord) > maxSortKeyBytes {
				continue // no such item can be written
			}
			esk, ok := d.startKeyBefore(pn, pa, desc, nil)
			if !ok {
				refused++
				continue
			}
			k := esk[d.sk.attr].(*types.AttributeValueMemberS).Value
			if desc {
				require.Less(t, k, ordAt, "n=%d desc", n)
			} else {
				require.Greater(t, k, ordAt, "n=%d", n)
			}
		}
	}
	require.Positive(t, refused, "some pairs have no start key strictly between")
}
