#!/usr/bin/env bash
# make demo: both example applications against the server in
# DDBINDEX_ENDPOINT (internal/withserver starts one), then the operator
# command built from their models (cmd/ddbindex-demo) checking the tables
# they leave and decoding a cursor the support desk handed out.
set -euo pipefail

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The tables of this run, named apart from any other run's.
prefix=demo-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')-

go run ./examples/supportdesk -table-prefix "$prefix" -keep -cursor-out "$dir/cursor"
go run ./examples/feed -table-prefix "$prefix" -keep
go build -o "$dir/ddbindex-demo" ./cmd/ddbindex-demo
# The operator command reads the standard AWS configuration, and
# --endpoint; a local server accepts any credentials.
endpoint=()
if [ "${DDBINDEX_ENDPOINT:-aws}" != aws ]; then
	endpoint=(--endpoint "$DDBINDEX_ENDPOINT")
	export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-demo} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-demo} AWS_REGION=${AWS_REGION:-us-east-1}
fi
ops() {
	echo
	echo "\$ ddbindex-demo --table-prefix $prefix $*"
	"$dir/ddbindex-demo" "${endpoint[@]}" --table-prefix "$prefix" "$@"
}

ops check
ops explain --model Ticket --index by_status --partition TEAM-7 --eq pending --desc --limit 3
ops cursor inspect - <"$dir/cursor"
# The same cursor sent with another partition's query: a client error.
status=0
ops cursor inspect --partition TEAM-8 --eq open - <"$dir/cursor" || status=$?
echo "(exit status $status: the cursor is refused)"
[ "$status" -eq 1 ]
if [ -z "${DDBINDEX_SERVER:-}" ]; then
	echo "(the demo's tables, named $prefix*, are left on $DDBINDEX_ENDPOINT)"
fi
