# The Makefile is trueup's interface: build, run, test, smoke, bench, fuzz, lint.
GO          ?= go
BIN         := bin/trueup
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT      ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# The build date is the commit's, so that two builds of one commit are byte-identical.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
BUILD_DATE  ?= $(shell TZ=UTC date -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ)
# Expanded once here, not at each use.
VERSION     := $(VERSION)
COMMIT      := $(COMMIT)
BUILD_DATE  := $(BUILD_DATE)
STAMP       := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(BUILD_DATE)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build run example-terraform test smoke bench fuzz lint docs docs-check openapi-lint postgres pgbouncer test-tools chromium \
	terraform clean dist dist-build image

all: build

## build: without cgo, as dist and the image build: kustomize imports Go's plugin package,
## which with cgo makes the linker keep every exported method (+44 MB)
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(STAMP)" -o $(BIN) ./cmd/trueup

## run: private PostgreSQL under .trueup/ and `trueup serve` on examples/; dashboard at http://127.0.0.1:8080
## (as root from a clone PostgreSQL's user cannot reach, under /var/lib/trueup/make-run; DATA_DIR=... to choose)
run: postgres build
	DATA_DIR="$(DATA_DIR)" ./.ci/run-data-dir.sh ./$(BIN) serve --config examples/trueup.yaml

## example-terraform: the getting-started example (docs/getting-started.md): a bare Git repository
## under .trueup/example-terraform holding examples/terraform/repo (created once by
## examples/terraform/setup.sh), and `trueup serve` on examples/terraform/trueup.yaml, which applies
## its two Buckets with the Terraform module kept in it; its own private PostgreSQL under
## .trueup/example-terraform/data (as root from a clone PostgreSQL's user cannot reach, under
## /var/lib/trueup/example-terraform; DATA_DIR=... to choose), which it names as it starts;
## Go's bin folder is on PATH, where `make terraform` may have built OpenTofu
example-terraform: postgres terraform build
	./examples/terraform/setup.sh
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" DATA_DIR="$(DATA_DIR)" RUN_NAME="make example-terraform" \
		TARGET_DIR=.trueup/example-terraform DEFAULT_DIR=.trueup/example-terraform/data \
		FALLBACK_DIR=/var/lib/trueup/example-terraform \
		./.ci/run-data-dir.sh ./$(BIN) serve --config examples/terraform/trueup.yaml

## test: the whole suite against a real PostgreSQL (private cluster, or TRUEUP_TEST_DATABASE_URL)
test: cc postgres pgbouncer chromium terraform test-tools
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" $(GO) test -race -count=1 -timeout 20m ./...

## smoke: start what `make run` starts, wait until every example resource is Ready (but the one that fails on purpose), print them, stop
smoke: postgres build
	TRUEUP_SMOKE_BIN=$(CURDIR)/$(BIN) $(GO) test -tags smoke -count=1 -run TestSmoke -v -timeout 5m ./cmd/trueup/

## docs-check: every tracked Markdown file: relative links and anchors resolve, mkdocs.yml's nav lists
## every page, README.md stays within 200 lines, no review labels or history words (make test runs it too)
docs-check:
	$(GO) test -count=1 -run TestRepositoryDocs ./internal/doccheck/

## bench: the benchmark suite; prints `name value unit` lines, then a table with the targets
bench: postgres
	$(GO) run ./internal/bench

## fuzz: each fuzz target for FUZZTIME (Go fuzzes one target per run); a crasher is written to
## the package's testdata/fuzz/<target>/, which plain `go test` then replays
FUZZTIME     ?= 30s
FUZZ_TARGETS := \
	internal/manifest:FuzzLoad \
	internal/manifest:FuzzParseStream \
	internal/manifest:FuzzDecodeCanonical \
	internal/manifest:FuzzTemplate \
	internal/webhook:FuzzParsePush \
	internal/webhook:FuzzAuthenticate \
	internal/store:FuzzParseLabelSelector \
	internal/store:FuzzDecodeStrings \
	internal/store:FuzzDecodeConditions \
	internal/store:FuzzConditionsJSON \
	internal/store:FuzzStorableJSON \
	internal/wire:FuzzWriteResources \
	internal/config:FuzzParse \
	actions/execaction:FuzzParseReply \
	actions/execaction:FuzzOutputCapture \
	actions/execaction:FuzzParsePlan \
	internal/sealed:FuzzOpen \
	internal/secrets:FuzzResolve \
	internal/render:FuzzPrecheck

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

## docs: regenerate the reference pages under docs/reference/ (config, metrics and API by
## tools/docgen; the CLI page by cmd/trueup's test, where the command tree is built); the
## tests TestReferencePagesCurrent and TestCLIReference fail while a committed page differs
docs:
	$(GO) run ./tools/docgen
	$(GO) test -count=1 -run '^TestCLIReference$$' ./cmd/trueup -update

## openapi-lint: an independent check of the API document (redocly's recommended rules; needs
## node and the npm registry; errors fail, warnings are printed)
REDOCLY ?= @redocly/cli@2.77.0
openapi-lint:
	npx --yes $(REDOCLY) lint internal/server/openapi.json --format=stylish

## cc: a C compiler for `go test -race` (cgo) when missing (apt-get as root, else print the command)
.PHONY: cc
cc:
	@GO=$(GO) ./.ci/ensure-cc.sh

## postgres: install PostgreSQL server binaries when missing (apt-get as root, else print the command)
postgres:
	@./.ci/ensure-postgres.sh

## pgbouncer: install PgBouncer for the tests behind a pooler when missing (apt-get as root, else print the command)
pgbouncer:
	@./.ci/ensure-pgbouncer.sh

## test-tools: build helm and promtool from the module proxy (the versions deploy/helm and
## deploy/monitoring's tests pin) before the suite, so their first build, minutes on a fresh
## machine, does not count against a test package's timeout
HELM_MODULE := $(shell sed -n 's/^const helmModule = "\(.*\)"/\1/p' deploy/helm/chart_test.go)
PROMTOOL_MODULE := $(shell sed -n 's/^const promtool = "\(.*\)"/\1/p' deploy/monitoring/monitoring_test.go)
test-tools:
	@d=$$(mktemp -d) && GOBIN=$$d $(GO) install $(HELM_MODULE) && GOBIN=$$d $(GO) install $(PROMTOOL_MODULE); s=$$?; rm -rf $$d; exit $$s

## chromium: install Debian's Chromium for the dashboard's browser test when missing
chromium:
	@./.ci/ensure-chromium.sh

## terraform: a Terraform or OpenTofu binary on PATH (the terraform action's tests run it); when
## there is none, OpenTofu is built once from the Go module proxy (a few minutes)
terraform:
	@GO=$(GO) ./.ci/ensure-terraform.sh

## dist: release archives for DIST_PLATFORMS, .debs for linux/amd64 and arm64 (nfpm; with
## man pages and bash, zsh and fish completion, checked by packaging's TestDeb), a
## CycloneDX SBOM (cyclonedx-gomod) and SHA256SUMS under dist/; the tools come from the Go
## module proxy. Static binaries (CGO_ENABLED=0), -trimpath, dated by the commit.
DIST           := dist
DIST_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
DEB_ARCHES     := amd64 arm64
NFPM           := github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
CYCLONEDX      := github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
PKG_VERSION    := $(shell ./packaging/pkg-version.sh '$(VERSION)' $(SOURCE_DATE_EPOCH))
TAR            := tar --sort=name --mtime=@$(SOURCE_DATE_EPOCH) --owner=0 --group=0 --numeric-owner

dist: DIST_BUILD := $(DIST_PLATFORMS)
dist: dist-build
	@rm -rf $(DIST)/stage && rm -f $(DIST)/*.tar.gz $(DIST)/*.deb $(DIST)/*.cdx.json $(DIST)/SHA256SUMS
	@set -e; for p in $(DIST_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; name=trueup_$(PKG_VERSION)_$${os}_$${arch}; dir=$(DIST)/stage/$$name; \
		mkdir -p $$dir; cp $(DIST)/build/$${os}_$${arch}/trueup README.md $$dir/; \
		if [ $$os = linux ]; then cp packaging/trueup.service $$dir/; cp packaging/trueup.yaml $$dir/trueup.yaml; fi; \
		$(TAR) -C $(DIST)/stage -cf - $$name | gzip -n -9 > $(DIST)/$$name.tar.gz; \
		echo "$(DIST)/$$name.tar.gz"; \
	done
	# In a test binary package main is cmd/trueup under its import path: -X main.version would
	# not reach it.
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) test -count=1 \
		-ldflags "-X github.com/trueup-dev/trueup/cmd/trueup.version=$(VERSION)" -run '^TestPackageDocs$$' ./cmd/trueup \
		-args -package-docs=$(CURDIR)/$(DIST)/build/deb
	@set -e; for arch in $(DEB_ARCHES); do \
		mkdir -p $(DIST)/build/deb; cp $(DIST)/build/linux_$$arch/trueup $(DIST)/build/deb/trueup; \
		DEB_ARCH=$$arch PKG_VERSION='$(PKG_VERSION)' SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) \
			$(GO) run $(NFPM) package --config packaging/nfpm.yaml --packager deb --target $(DIST)/; \
	done
	$(GO) test -count=1 -run '^TestDeb$$' ./packaging -args -version=$(VERSION) $(foreach a,$(DEB_ARCHES),-deb=$(CURDIR)/$(DIST)/trueup_$(PKG_VERSION)_$(a).deb)
	$(GO) run $(CYCLONEDX) bin -json -licenses -std -noserial -notimestamp -version '$(VERSION)' \
		-output $(DIST)/trueup_$(PKG_VERSION).cdx.json $(DIST)/build/linux_amd64/trueup
	@rm -rf $(DIST)/stage
	cd $(DIST) && sha256sum *.tar.gz *.deb *.cdx.json > SHA256SUMS && cat SHA256SUMS

## dist-build: dist/build/<os>_<arch>/trueup for DIST_BUILD (static, -trimpath, stamped)
DIST_BUILD ?= linux/amd64
dist-build:
	@set -e; for p in $(DIST_BUILD); do \
		os=$${p%/*}; arch=$${p#*/}; echo "build $$os/$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w $(STAMP)" \
			-o $(DIST)/build/$${os}_$${arch}/trueup ./cmd/trueup; \
	done

## image: the container image (linux/amd64 and arm64) as an OCI layout in dist/image and a
## docker-loadable tarball of linux/amd64, built by tools/mkimage (go-containerregistry, no
## Docker daemon), then checked by its test reading what was written
IMAGE_TAR := $(DIST)/trueup_$(PKG_VERSION)_image_linux_amd64.tar
image: DIST_BUILD := linux/amd64 linux/arm64
image: dist-build
	$(GO) run ./tools/mkimage -bin-dir $(DIST)/build -platforms linux/amd64,linux/arm64 \
		-version '$(VERSION)' -revision $(COMMIT) -created $(BUILD_DATE) \
		-layout $(DIST)/image -tarball $(IMAGE_TAR)
	$(GO) test -count=1 -run TestImage ./tools/mkimage -args -layout=$(CURDIR)/$(DIST)/image -tarball=$(CURDIR)/$(IMAGE_TAR)

clean:
	rm -rf bin $(DIST)
