# Development tasks for ddbindex.
#
# Integration tests, examples and benchmarks run against local
# DynamoDB-compatible servers installed from package.json into node_modules.
# internal/withserver starts a private server on a free port for each run,
# passes it to the command as DDBINDEX_ENDPOINT, and stops it afterwards.
# With DDBINDEX_ENDPOINT already set (a URL, or "aws" for real DynamoDB),
# everything runs once against that endpoint instead.
#
#   make test                      the whole suite against dynoxide, then dynalite
#   make test TESTFLAGS='-run Foo' extra go test flags (GOFLAGS is passed through too)
#   make fuzz FUZZTIME=10s         each fuzz target for FUZZTIME

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c

ROOT_PKG   := github.com/ddbindex/ddbindex
NODE_STAMP := node_modules/.ddbindex-stamp
FUZZTIME   ?= 60s
TESTFLAGS  ?=
# Release 2025.1.1 of staticcheck; the module proxy knows it as v0.6.1.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.6.1

export GOFLAGS

# make test runs each package once per server: those in RACE_PKGS with the
# race detector, those in PLAIN_PKGS without it (-race slows a test binary
# several times, and its build more). A package goes in RACE_PKGS when it,
# or its tests, run the module's code on several goroutines at once;
# make test-lists fails unless every package is in exactly one list.
# docs/operations.md ("The race detector") keeps the reasons too.
#
#   .                    concurrent writes and moves, sharded reads' parallel
#                        page fetches, the schema cache under concurrent use
#   ./migrate            the Router's refresh loop, Shadows' comparisons,
#                        Backfill's workers, the runbook's concurrent fleet
#   ./stream             the Consumer's apply workers, two consumers sharing
#                        leases, concurrent checkpoint writers
#   ./ops                its backfill command's progress bar, drawn from
#                        Backfill's workers
#   ./examples/lambda    the handler applies a batch with workers, through
#                        the test's shared request recorder
#   ./internal/withserver  its signal-forwarding and exit-waiting goroutines
RACE_PKGS := . ./migrate ./stream ./ops ./examples/lambda ./internal/withserver
#   ./schema             Prepare and Check call DynamoDB one request at a time
#   ./cmd/ddbindex-demo, ./examples/feed, ./examples/models,
#   ./examples/supportdesk  sequential programs; the library code they run
#                        concurrently (consumers, backfills) is race-tested in
#                        its own package
#   ./internal/av, ./internal/nilwalk, ./internal/retry, ./internal/expr,
#   ./internal/throttle  pure functions and a retry loop, on the caller's
#                        goroutine
#   ./internal/ddbtest, ./internal/faults, ./internal/slowddb,
#   ./internal/multikey  test support; their own tests are
#                        sequential, and every race-tested package's parallel
#                        tests share their clients and fault transports under
#                        the race detector
#   ./internal/awstest   a cost estimate and a clean-up list, sequential
#   ./examples/lambda/zipbootstrap  writes one zip, sequentially
#   ./internal/bridge, ./internal/oteltest, ./internal/spec  no tests
PLAIN_PKGS := ./schema ./cmd/ddbindex-demo ./examples/feed ./examples/models \
	./examples/supportdesk ./internal/av ./internal/nilwalk ./internal/retry \
	./internal/ddbtest ./internal/faults ./internal/slowddb ./internal/multikey ./internal/awstest ./internal/bridge \
	./internal/oteltest ./internal/spec ./internal/expr ./internal/throttle \
	./examples/lambda/zipbootstrap

ifneq ($(strip $(DDBINDEX_ENDPOINT)),)
# withserver starts nothing when DDBINDEX_ENDPOINT is set: run once.
TEST_SERVERS := dynoxide
else
TEST_SERVERS := dynoxide dynalite
endif

# WITH_SERVER starts a recipe line: it builds withserver once into a
# temporary directory, removed when the line's shell exits, as "$$ws".
WITH_SERVER = ws_dir=$$(mktemp -d); trap 'rm -rf "$$ws_dir"' EXIT; \
	go build -o "$$ws_dir/withserver" ./internal/withserver; ws="$$ws_dir/withserver";

.PHONY: node_modules test test-lists test-aws demo bench lint cover fuzz clean lambda-zip

# lambda-zip builds the upkeep function of examples/lambda for its
# templates' runtime (provided.al2023, arm64) into LAMBDA_ZIP, the path their
# CodeUri names: sam deploy uploads it as it is (no sam build).
LAMBDA_ZIP := examples/lambda/build/bootstrap.zip
lambda-zip:
	rm -rf examples/lambda/build && mkdir -p examples/lambda/build
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -trimpath \
		-o examples/lambda/build/bootstrap ./examples/lambda
	go run ./examples/lambda/zipbootstrap $(LAMBDA_ZIP) examples/lambda/build/bootstrap

node_modules: $(NODE_STAMP)

# npm ci replaces node_modules, stamp included, with exactly package-lock.json.
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

# A server with no build for this platform (dynoxide outside linux/amd64)
# is skipped, saying so: -check exits 3 for it.
test: node_modules test-lists
	$(WITH_SERVER) for s in $(TEST_SERVERS); do \
		rc=0; "$$ws" -check "$$s" || rc=$$?; \
		if [ $$rc -eq 3 ]; then continue; elif [ $$rc -ne 0 ]; then exit $$rc; fi; \
		"$$ws" -server "$$s" -- go test -race -count=1 -timeout 30m $(TESTFLAGS) $(RACE_PKGS); \
		"$$ws" -server "$$s" -- go test -count=1 -timeout 30m $(TESTFLAGS) $(PLAIN_PKGS); \
	done

# test-lists fails unless RACE_PKGS and PLAIN_PKGS together name every
# package of the module (go list ./...), each exactly once.
test-lists:
	@all=$$(go list ./... | sort); \
	listed=$$( { go list $(RACE_PKGS); go list $(PLAIN_PKGS); } | sort); \
	twice=$$(tr ' ' '\n' <<<"$(RACE_PKGS) $(PLAIN_PKGS)" | sed -e '/^$$/d' -e 's|/$$||' | sort | uniq -d); \
	both=$$(printf '%s\n' "$$(uniq -d <<<"$$listed")" "$$twice" | sed '/^$$/d'); \
	missing=$$(comm -23 <(echo "$$all") <(uniq <<<"$$listed")); \
	extra=$$(comm -13 <(echo "$$all") <(uniq <<<"$$listed")); \
	if [ -n "$$both$$missing$$extra" ]; then \
		[ -z "$$both" ] || { echo "in RACE_PKGS and PLAIN_PKGS, or twice in one:"; echo "$$both"; }; \
		[ -z "$$missing" ] || { echo "in neither RACE_PKGS nor PLAIN_PKGS (Makefile):"; echo "$$missing"; }; \
		[ -z "$$extra" ] || { echo "listed, but not a package of go list ./...:"; echo "$$extra"; }; \
		exit 1; \
	fi

# test-aws runs the suite against real DynamoDB (the standard AWS
# configuration chain), with a cost estimate printed first and a
# confirmation; not part of CI. See internal/awstest.
test-aws: node_modules
	go run ./internal/awstest

# demo runs both examples, then the operator command built from their
# models (cmd/ddbindex-demo) on the tables they leave: examples/demo.sh.
demo: node_modules
	$(WITH_SERVER) "$$ws" -server dynoxide -- bash examples/demo.sh

bench: node_modules
	$(WITH_SERVER) "$$ws" -server dynoxide -- \
		go test -run '^$$' -bench . -benchmem -count=1 $(TESTFLAGS) ./... | tee bench.txt

# lint also checks that the root package stays free of aws-lambda-go and
# DynamoDB Streams (package stream has them): it imports neither, and depends
# on them only through the stream types the SDK's attributevalue codec
# imports, never the Streams client (as TestRootImportsNoStreamClients does).
lint:
	@unformatted=$$(find . -path ./node_modules -prune -o -path ./.git -prune -o -name '*.go' -print | xargs -r gofmt -l); \
	if [ -n "$$unformatted" ]; then echo "gofmt -l reports:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	@forbidden='^github\.com/aws/(aws-lambda-go|aws-sdk-go-v2/service/dynamodbstreams)(/|$$)'; \
	imports=$$(go list -f '{{join .Imports "\n"}}' .); \
	deps=$$(go list -deps .); \
	allowed=$$(go list -deps github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue); \
	bad=$$( { grep -E "$$forbidden" <<<"$$imports" || true; grep -E "$$forbidden" <<<"$$deps" | grep -vxF -f <(echo "$$allowed") || true; } | sort -u); \
	if [ -n "$$bad" ]; then echo "the root package must not depend on:"; echo "$$bad"; exit 1; fi; \
	echo "root package: no aws-lambda-go, no DynamoDB Streams client"
	@sc_dir=$$(mktemp -d); trap 'rm -rf "$$sc_dir"' EXIT; \
	if GOBIN="$$sc_dir" go install $(STATICCHECK) 2>"$$sc_dir/log"; then \
		echo "staticcheck ./..."; "$$sc_dir/staticcheck" ./...; \
	else \
		echo "warning: cannot install $(STATICCHECK); skipping staticcheck:"; cat "$$sc_dir/log"; \
	fi

# Per-file statement coverage of the root package, from all tests of the
# module. A block listed by several test binaries counts once, as covered
# if any of them ran it.
cover: node_modules
	$(WITH_SERVER) "$$ws" -server dynoxide -- \
		go test -race -count=1 -coverprofile=coverage.out -coverpkg=$(ROOT_PKG) $(TESTFLAGS) ./...
	@awk -v pkg='$(ROOT_PKG)/' ' \
		NR == 1 || index($$0, pkg) != 1 { next } \
		{ split($$1, loc, ":"); f = substr(loc[1], length(pkg) + 1) } \
		f ~ /\// { next } \
		!($$1 in seen) { seen[$$1] = 1; stmts[f] += $$2 } \
		$$3 > 0 && !($$1 in hit) { hit[$$1] = 1; covered[f] += $$2 } \
		END { \
			for (f in stmts) { \
				printf "%-32s %6.1f%%\n", f, stmts[f] ? 100 * covered[f] / stmts[f] : 100 | "sort"; \
				all += stmts[f]; cov += covered[f] \
			} \
			close("sort"); \
			if (all == 0) { print "no statements of " pkg " in coverage.out"; exit 1 } \
			printf "%-32s %6.1f%%\n", "total", 100 * cov / all \
		}' coverage.out

fuzz:
	@list=$$(go test -list '^Fuzz' .); \
	targets=$$(grep '^Fuzz' <<<"$$list" || true); \
	if [ -z "$$targets" ]; then echo "no fuzz targets in $(ROOT_PKG)"; exit 0; fi; \
	for t in $$targets; do \
		echo "go test -run '^\$$' -fuzz '^$$t\$$' -fuzztime $(FUZZTIME) ."; \
		go test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) .; \
	done

# Generated files only: node_modules stays (make node_modules refreshes it).
clean:
	rm -rf coverage.out bench.txt *.test testdata/fuzz-cache examples/lambda/build
