# airlock: the few targets people expect. Every target installs what it
# needs first (scripts/setup.sh), so each works on a fresh machine.
GO        ?= go
BIN       := bin/airlock
PKGS      := ./...


.PHONY: all build setup test test-fast lint bench demo fuzz clean escape-image

all: build

setup:
	@./scripts/setup.sh

# bin/airlock is one file: the front (cmd/airlock-front: the policy
# check, which must start fast) with the core (cmd/airlock, every other
# verb) embedded; scripts/build.sh says how. Static (no cgo): a sandbox's
# init re-executes the core, and a static Go binary starts about a
# millisecond sooner than one that goes through the dynamic loader.
build:
	GO=$(GO) ./scripts/build.sh $(BIN)

lint: setup
	@echo "== gofmt"; out=$$(gofmt -l cmd internal sdk); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	@echo "== goimports"; gi=$$($(GO) env GOPATH)/bin/goimports; out=$$($$gi -l cmd internal sdk) || exit 1; if [ -n "$$out" ]; then echo "goimports needed: $$out"; exit 1; fi
	@echo "== go vet"; $(GO) vet $(PKGS)
	@echo "== go vet (the front's build: -tags airlock_noyaml)"; $(GO) vet -tags airlock_noyaml ./internal/policy/ ./internal/netpolicy/ ./internal/cli/policycmd/
	@echo "== staticcheck"; $$($(GO) env GOPATH)/bin/staticcheck $(PKGS)
	@echo "== govulncheck"; ./scripts/vulncheck.sh

# The full suite, as CI runs it: lint, then every test with the race
# detector (root-only tests run here: CI machines are root), then each
# fuzz target for a short fixed time.
# AIRLOCK_REQUIRE_GVISOR: the gVisor tests fail instead of skipping when
# runsc is missing (setup installs Debian's). The cgroup v2 VM test (an
# emulated machine, QEMU without KVM) runs after the rest, on its own: run
# beside every other package it was starved into a timing failure.
VM_PKG := ./test/vm/
test: lint build
	AIRLOCK_REQUIRE_GVISOR=1 $(GO) test -race -count=1 -timeout 20m $$($(GO) list $(PKGS) | grep -v '/test/vm$$')
	$(GO) test -race -count=1 -timeout 15m $(VM_PKG)
	@$(MAKE) --no-print-directory escape-image
	@$(MAKE) --no-print-directory fuzz FUZZTIME=250000x CLASSIFY_FUZZTIME=50000x

# The backends' escape tests again, on a real distribution's root instead
# of the host's (issue 21): a minimal Debian template that `airlock
# template debian` builds with mmdebstrap from this host's apt sources.
escape-image: setup build
	@d=$$(mktemp -d /tmp/airlock-escimg.XXXXXX); chmod 711 $$d; trap 'rm -rf "$$d"' EXIT; \
	echo "== escape tests on a Debian template ($$d)"; \
	AIRLOCK_CORE_DIR=$$d/cores ./$(BIN) template debian --data-dir $$d/data deb && \
	AIRLOCK_REQUIRE_GVISOR=1 AIRLOCK_TEST_IMAGE_TEMPLATE=$$d/data:deb \
		$(GO) test -race -count=1 -run 'Escape' ./internal/runtime/native/ ./internal/runtime/gvisor/

# The fast tier: every test that needs no root, run as an unprivileged
# user (nobody, when make runs as root) so that the root-only ones skip;
# the manager and its modules on the fake backend. Under a minute; no lint,
# no race detector (`make test` is the whole suite). TESTFLAGS go to
# go test, e.g. TESTFLAGS='-cover ./internal/manager/'.
TESTFLAGS ?= -count=1 ./...
test-fast: setup
	./scripts/test-fast.sh $(TESTFLAGS)

# An execution count, not a duration: Go 1.26's fuzz coordinator can report
# "context deadline exceeded" at the end of a -fuzztime duration with no
# finding at all (go.dev/issue/75804, fixed in Go 1.27).
FUZZTIME ?= 1000000x
# The classifier runs each input twice through a shell parser: slower per input.
CLASSIFY_FUZZTIME ?= 200000x
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzProgram$$' -fuzztime $(FUZZTIME) ./internal/kernel/seccomp/
	$(GO) test -run '^$$' -fuzz '^FuzzClassify$$' -fuzztime $(CLASSIFY_FUZZTIME) ./internal/classify/
	$(GO) test -run '^$$' -fuzz '^FuzzBraceWords$$' -fuzztime 50000x ./internal/classify/engine/
	$(GO) test -run '^$$' -fuzz '^FuzzSafePath$$' -fuzztime 50000x ./internal/bundle/
	$(GO) test -run '^$$' -fuzz '^FuzzRedact$$' -fuzztime 20000x ./internal/redact/
	$(GO) test -run '^$$' -fuzz '^FuzzParseTarget$$' -fuzztime 50000x ./internal/netpolicy/
	$(GO) test -run '^$$' -fuzz '^FuzzParseHead$$' -fuzztime 50000x ./internal/egress/h1/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30000x ./internal/lockfile/
	$(GO) test -run '^$$' -fuzz '^FuzzCreateRequest$$' -fuzztime 30000x ./internal/api/
	$(GO) test -run '^$$' -fuzz '^FuzzTaskRequest$$' -fuzztime 30000x ./internal/api/
	$(GO) test -run '^$$' -fuzz '^FuzzCreateRequest$$' -fuzztime 30000x ./internal/e2b/

# Benchmarks with their peers in the same run; numbers go in issue notes.
bench: setup build
	$(GO) test -run '^$$' -bench 'RunVsBwrap|AgentStartVsStaticGo|PoolCycleVsBwrap' -benchtime 200x ./cmd/airlock/
	$(GO) test -run '^$$' -bench 'PolicyCheckVsStaticGo' -benchtime 500x ./cmd/airlock-front/
	$(GO) test -run '^$$' -bench 'CreateReady|ExecTrue|DestroyAfterExec' -benchtime 300x ./internal/runtime/native/
	$(GO) test -run '^$$' -bench 'IdleMemory' -benchtime 1x ./internal/runtime/native/
	$(GO) test -run '^$$' -bench 'CreateReady|ExecTrue' -benchtime 20x ./internal/runtime/gvisor/
	$(GO) test -run '^$$' -bench 'SyscallHeavy' -benchtime 3x ./internal/runtime/gvisor/
	AIRLOCK_BENCH=1 $(GO) test -count=1 -v -run 'TestBenchAPI|TestBenchAuditExec' ./internal/api/ | grep BENCH
	AIRLOCK_BENCH=1 $(GO) test -count=1 -v -run 'TestTemplateImportBenchVsSkopeoUmoci' ./cmd/airlock/ | grep -E 'one-shot|import of|FAIL|^ok'
	AIRLOCK_BENCH=1 $(GO) test -count=1 -v -run 'TestBenchE2B|TestBenchMCPExec' ./cmd/airlock/ | grep BENCH
	$(GO) test -run '^$$' -bench 'AuditWrites' -benchtime 10000x ./internal/audit/
	$(GO) test -run '^$$' -bench 'Classify' -benchtime 20000x ./internal/policy/
	$(GO) test -run '^$$' -bench . -benchtime 20x ./internal/egress/...

demo: setup build
	./scripts/demo.sh

clean:
	rm -rf bin
