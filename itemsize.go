package ddbindex

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex/internal/av"
)

// maxItemSize is DynamoDB's limit on an item's size, as av.ItemSize counts
// it: 400 KB. DynamoDB refuses a write of a larger item, whatever the
// table; an index-table entry is such an item too.
const maxItemSize = 400 * 1024

// maxVersion is the longest version a Change carries (maxVersionDigits
// digits, stored as a String): the entries of a whole item are sized with
// it, so that no later change's version makes them too large.
var maxVersion = strings.Repeat("9", maxVersionDigits)

// checkItemSize refuses an item whose size, with extra bytes it may still
// gain, is over maxItemSize. what names the item.
func checkItemSize(what string, item map[string]types.AttributeValue, extra int) error {
	if n := av.ItemSize(item) + extra; n > maxItemSize {
		more := ""
		if extra > 0 {
			more = fmt.Sprintf(", with %d bytes the library may add to it", extra)
		}
		return writeErr("%s is %d bytes as DynamoDB counts them (attribute names and values%s), over DynamoDB's item limit of %d (400 KB)",
			what, n, more, maxItemSize)
	}
	return nil
}

// baseRoom is the most bytes the library may add to a whole base item after
// prepare sized it: a version of up to 20 digits (Put over a tombstone
// starts past the tombstone's), a write token in write-through mode, and the
// tombstone marks a soft delete adds.
func (t *Table[T]) baseRoom(item map[string]types.AttributeValue) int {
	n := 0
	if t.s.version != nil {
		n += len(t.s.version.attr) + av.NumberSize("18446744073709551615") - av.AttrSize(t.s.version.attr, item[t.s.version.attr])
	}
	if t.writeThrough() {
		n += len(t.opts.WriteTokenAttr) + len(newToken())
	}
	if t.s.softDelete {
		n += t.opts.tombstoneMarkBytes()
	}
	return max(n, 0)
}

// checkEntrySizes refuses index-table writes of which one is over
// DynamoDB's item limit, with room bytes more.
func checkEntrySizes(writes []IndexWrite, room int) error {
	for _, w := range writes {
		what := "the entry of index " + w.Index
		if w.Tombstone {
			what = "the tombstone of index " + w.Index
		}
		if err := checkItemSize(what, w.Item, room); err != nil {
			return err
		}
	}
	return nil
}
