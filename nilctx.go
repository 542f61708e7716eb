package ddbindex

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// callable is usable for a method that takes a context: a nil ctx fails
// with sentinel (ErrInvalidQuery for a read, ErrInvalidWrite for a write)
// before anything is sent, as the SDK itself would panic on it.
func (t *Table[T]) callable(ctx context.Context, op string, sentinel error, optFns ...func(*dynamodb.Options)) error {
	if err := t.usable(op, sentinel, optFns...); err != nil {
		return err
	}
	if ctx == nil {
		return fmt.Errorf("%w: %s of %s with a nil context.Context; pass context.Background() or a request's context", sentinel, op, t.s.model)
	}
	return nil
}
