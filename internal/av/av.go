// Package av holds the module's one reading of DynamoDB attribute values
// (service/dynamodb/types.AttributeValue): their equality as DynamoDB sees
// it ([Equal], [EqualItems]), their size as DynamoDB counts it ([ItemSize],
// [Size]), and the conversion of DynamoDB Streams images into them
// ([FromStreamImage]). Every other package of the module compares, sizes
// and converts attribute values through it.
//
// Nothing here panics on a caller's value: a malformed value (a nil member,
// a Number that is not a number, an unknown type) compares by identity,
// sizes by its text, and fails conversion with an error matching
// [ErrMalformed].
package av
