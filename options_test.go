package ddbindex

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNewRefusesBadOptions: New refuses options it cannot honour, at
// start-up: a negative retention (tombstones that expire before they are
// written) and a negative cursor cap; and attribute names reserved by the
// options that collide with a model attribute.
func TestNewRefusesBadOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fn   func(*Options)
		want string
	}{
		{"negative retention", func(o *Options) { o.Retention = -time.Hour }, "Options.Retention is -1h0m0s"},
		{"negative cursor cap", func(o *Options) { o.MaxCursorBytes = -1 }, "Options.MaxCursorBytes is -1"},
		{"deleted attribute is a model attribute", func(o *Options) { o.DeletedAttr = "title" }, `attribute "title" is reserved`},
		{"TTL attribute is a model attribute", func(o *Options) { o.TTLAttr = "ver" }, `attribute "ver" is reserved`},
		{"version attribute is a model attribute", func(o *Options) { o.VersionAttr = "team" }, `attribute "team" is reserved`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := New[wrTicket](nil, tc.fn)
			require.Nil(t, tb)
			require.ErrorIs(t, err, ErrDeclaration)
			require.ErrorContains(t, err, tc.want)
		})
	}
	for _, fn := range []func(*Options){
		func(o *Options) { o.Retention = 0; o.MaxCursorBytes = 0 }, // the defaults
		func(o *Options) { o.Retention = time.Minute; o.MaxCursorBytes = 100 },
	} {
		_, err := New[wrTicket](nil, fn)
		require.NoError(t, err)
	}
}
