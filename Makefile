# The Makefile is trueup's interface: build, run, test, smoke, bench, fuzz, lint.
GO          ?= go
BIN         := bin/trueup
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build run test smoke bench fuzz lint openapi-lint postgres chromium terraform clean

all: build

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/trueup

## run: private PostgreSQL under .trueup/ and `trueup serve` on examples/; dashboard at http://127.0.0.1:8080
## (as root from a clone PostgreSQL's user cannot reach, under /var/lib/trueup/make-run; DATA_DIR=... to choose)
run: postgres build
	./$(BIN) serve --config examples/trueup.yaml $$(DATA_DIR="$(DATA_DIR)" ./.ci/run-data-dir.sh)

## test: the whole suite against a real PostgreSQL (private cluster, or TRUEUP_TEST_DATABASE_URL)
test: postgres chromium terraform
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" $(GO) test -race -count=1 -timeout 20m ./...

## smoke: start what `make run` starts, wait until every example resource is Ready, print them, stop
smoke: postgres build
	TRUEUP_SMOKE_BIN=$(CURDIR)/$(BIN) $(GO) test -tags smoke -count=1 -run TestSmoke -v -timeout 5m ./cmd/trueup/

## bench: the benchmark suite; prints `name value unit` lines, then a table with the targets
bench: postgres
	$(GO) run ./internal/bench

## fuzz: each fuzz target for FUZZTIME (Go fuzzes one target per run); a crasher is written to
## the package's testdata/fuzz/<target>/, which plain `go test` then replays
FUZZTIME     ?= 30s
FUZZ_TARGETS := \
	internal/manifest:FuzzLoad \
	internal/manifest:FuzzParseStream \
	internal/webhook:FuzzParsePush \
	internal/webhook:FuzzAuthenticate \
	internal/store:FuzzParseLabelSelector \
	internal/config:FuzzParse \
	actions/execaction:FuzzParseReply \
	actions/execaction:FuzzOutputCapture \
	actions/execaction:FuzzParsePlan \
	internal/sealed:FuzzOpen \
	internal/secrets:FuzzResolve

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name (./$$pkg, $(FUZZTIME))"; \
		GO=$(GO) ./.ci/fuzz-one.sh $$pkg $$name $(FUZZTIME); \
	done

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

## openapi-lint: an independent check of the API document (redocly's recommended rules; needs
## node and the npm registry; errors fail, warnings are printed)
REDOCLY ?= @redocly/cli@2.77.0
openapi-lint:
	npx --yes $(REDOCLY) lint internal/server/openapi.json --format=stylish

## postgres: install PostgreSQL server binaries when missing (apt-get as root, else print the command)
postgres:
	@./.ci/ensure-postgres.sh

## chromium: install Debian's Chromium for the dashboard's browser test when missing
chromium:
	@./.ci/ensure-chromium.sh

## terraform: a Terraform or OpenTofu binary on PATH (the terraform action's tests run it); when
## there is none, OpenTofu is built once from the Go module proxy (a few minutes)
terraform:
	@GO=$(GO) ./.ci/ensure-terraform.sh

clean:
	rm -rf bin
