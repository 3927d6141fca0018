# rawbatch — see README.md. Needs Go and LibRaw's headers (Debian: libraw-dev);
# the tests also use raw-identify and dcraw_emu (Debian: libraw-bin).
GO       ?= go
BIN      := bin/rawbatch
PKGS     := ./...
APT_PKGS := libraw-dev libraw-bin libwebp-dev pkg-config gcc g++

.PHONY: all build test test-short demo deps lint bench clean

all: build

# deps installs the system packages rawbatch needs, when they are missing.
deps:
	@if ! pkg-config --exists libraw_r || ! pkg-config --exists libwebp || ! command -v raw-identify >/dev/null || ! command -v dcraw_emu >/dev/null; then \
		echo "installing $(APT_PKGS)"; \
		SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $(APT_PKGS); \
	fi

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/rawbatch

# demo: install what is missing, build, and convert the sample files in testdata/raw into ./out.
demo: deps build
	./$(BIN) convert testdata/raw -o out; status=$$?; ls -l out; exit $$status

test: lint
	$(GO) test -count=1 -timeout 15m $(PKGS)
	$(GO) test -run '^$$' -fuzz '^FuzzSniff$$' -fuzztime 10s -fuzzminimizetime 3s ./pipeline/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 15s -fuzzminimizetime 3s ./pipeline/header/

test-short:
	$(GO) test -short -count=1 $(PKGS)

lint:
	@fmt_out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$fmt_out" ]; then echo "gofmt needed:"; echo "$$fmt_out"; exit 1; fi
	$(GO) vet $(PKGS)

# bench runs the benchmarks of the memory budget and the pipeline; each
# prints a table (about 15 minutes on 2 cores, ~2 GB of temporary files).
BENCH_FLAGS := -run '^$$' -benchtime 1x -timeout 60m
bench:
	$(GO) test $(BENCH_FLAGS) -bench 'BenchmarkRead1000' ./pipeline/header/
	$(GO) test $(BENCH_FLAGS) -bench 'BenchmarkConvert24MP|BenchmarkEstimateCalibration|BenchmarkNoLeak500' ./pipeline/
	$(GO) test $(BENCH_FLAGS) -bench 'BenchmarkBudget45MP|BenchmarkRerun1000|BenchmarkVariants24MP' ./cmd/rawbatch/

clean:
	rm -rf bin out
