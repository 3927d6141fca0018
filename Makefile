# rawbatch — see README.md. Needs Go, a C/C++ compiler and libjpeg/zlib
# headers; `make deps` builds the bundled LibRaw 0.21.4 (scripts/libraw.sh)
# into build/ and rawbatch links it statically. LIBRAW=system builds against
# the system libraw_r through pkg-config instead (Debian: libraw-dev); the
# tests then use the system's raw-identify and dcraw_emu (libraw-bin).
GO       ?= go
BIN      := bin/rawbatch
PKGS     := ./...
APT_PKGS := libraw-dev libraw-bin libwebp-dev liblensfun-dev liblensfun-data-v1 libglib2.0-dev libjpeg-dev libjpeg62-turbo-dev zlib1g-dev libimage-exiftool-perl time pkg-config gcc g++ nats-server chromium libavif-dev libjxl-dev libavif-bin libjxl-tools binutils
# RAWBATCH_TEST_CORPUS: the shared folder of real camera files beside the
# repository, which the look benchmark also reads when it exists.
RAWBATCH_TEST_CORPUS ?= $(abspath ../shared/rawcorpus)
export RAWBATCH_TEST_CORPUS
# GOEXPERIMENT=simd gives Go's simd/archsimd to the AVX2 kernels of the
# noise reduction and the lens warp (pipeline/denoise, pipeline/warp: the
# same values as their scalar loops, which run without it or on a CPU
# without AVX2).
GOEXPERIMENT ?= simd
export GOEXPERIMENT
# SCALAR_PKGS are tested again built without it (their scalar loops alone).
SCALAR_PKGS := ./pipeline/colour/ ./pipeline/demosaic/ ./pipeline/denoise/ ./pipeline/look/ ./pipeline/warp/ ./pipeline/lens/ ./pipeline/resize/ ./pipeline/highlight/
# LIBRAW is bundled (default) or system.
LIBRAW   ?= bundled
export LIBRAW
# GOENV runs a command with the bundled LibRaw's pkg-config file and
# oracles (raw-identify, dcraw_emu) first when it is built.
GOENV     = env $$(scripts/libraw.sh env)
# The LibRaw-specific tests that CI also runs against the system LibRaw:
# all of the binding and header packages, and these in the others.
LIBRAW_TESTS := TestLibRaw|TestColourMatchesDcrawEmu|TestRealFilesOutputSize|TestBadInputErrors|TestSonyLossless|TestCrop|TestScripts/(version|inspect|bad_inputs|convert_samples|crop)$$

.PHONY: all build test test-short test-system demo deps libraw lint bench clean

all: build

# deps installs the system packages rawbatch needs, when they are missing.
deps:
	@if ! pkg-config --exists libraw_r libwebp libjpeg zlib lensfun libavif libjxl libjxl_threads || ! command -v avifdec >/dev/null || ! command -v djxl >/dev/null || ! command -v raw-identify >/dev/null || ! command -v dcraw_emu >/dev/null || ! command -v exiftool >/dev/null || ! command -v chromium >/dev/null || ! { command -v nats-server || test -x /usr/sbin/nats-server; } >/dev/null; then \
		echo "installing $(APT_PKGS)"; \
		SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $(APT_PKGS); \
	fi
	@scripts/libraw.sh build

# libraw builds the bundled LibRaw when it is not built yet (nothing with
# LIBRAW=system).
libraw:
	@scripts/libraw.sh build

build: libraw
	$(GOENV) $(GO) build -trimpath -o $(BIN) ./cmd/rawbatch

# demo: install what is missing, build, and convert the sample files in testdata/raw into ./out.
demo: deps build
	./$(BIN) convert testdata/raw -o out; status=$$?; ls -l out; exit $$status

test: deps lint
	$(GOENV) $(GO) test -count=1 -timeout 25m $(PKGS)
	$(GOENV) GOEXPERIMENT= RAWBATCH_SCALAR=1 $(GO) test -count=1 $(SCALAR_PKGS)
	# Fuzz budgets are execution counts (about 10 s each here), not durations:
	# a duration races Go's fuzz coordinator at its deadline and fails with a
	# bare "context deadline exceeded" on a loaded machine (golang/go#75804,
	# fixed in Go 1.27).
	$(GOENV) $(GO) test -run '^$$' -fuzz '^FuzzSniff$$' -fuzztime 400000x -fuzzminimizetime 3s ./pipeline/header/
	$(GOENV) $(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30000x -fuzzminimizetime 3s ./pipeline/header/
	$(GOENV) $(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 600000x -fuzzminimizetime 3s ./pipeline/dngopcode/

test-short: libraw
	$(GOENV) $(GO) test -short -count=1 $(PKGS)

# test-system runs the LibRaw-specific tests (colour vs dcraw_emu,
# unsupported-variant gating, header sizes vs raw-identify) against the
# system LibRaw and its libraw-bin oracles.
test-system:
	RAWBATCH_LIBRAW=system LIBRAW=system $(GO) test -count=1 ./pipeline/internal/libraw/ ./pipeline/header/
	RAWBATCH_LIBRAW=system LIBRAW=system $(GO) test -count=1 -run '$(LIBRAW_TESTS)' ./pipeline/ ./pipeline/synthdng/ ./cmd/rawbatch/

lint: libraw
	@fmt_out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$fmt_out" ]; then echo "gofmt needed:"; echo "$$fmt_out"; exit 1; fi
	$(GOENV) $(GO) vet $(PKGS)
	# The scalar build of the packages with AVX2 kernels (no GOEXPERIMENT).
	$(GOENV) GOEXPERIMENT= $(GO) vet $(SCALAR_PKGS)

# bench runs the benchmarks of the memory budget, the pipeline and the look
# (BenchmarkLookTable: mean ΔE2000 against the embedded previews); each
# prints a table (about 15 minutes on 2 cores, ~2 GB of temporary files).
# Speed and memory are measured on the realistic set (docs/performance.md),
# written once into build/realset-vN (about 0.5 GB with the 45 MP files).
# BenchmarkStageShare24MP prints each step's share of a realistic 24 MP
# default conversion against issue 25's targets.
BENCH_FLAGS := -run '^$$' -benchtime 1x -timeout 60m
bench: libraw
	$(GOENV) $(GO) test $(BENCH_FLAGS) -bench 'BenchmarkRead1000' ./pipeline/header/
	$(GOENV) $(GO) test $(BENCH_FLAGS) -benchtime 3x -bench 'BenchmarkStageShare24MP' ./pipeline/
	$(GOENV) $(GO) test $(BENCH_FLAGS) -bench 'BenchmarkConvert24MP|BenchmarkDetail24MP|BenchmarkEstimateCalibration|BenchmarkNoLeak500|BenchmarkLookTable|BenchmarkFusedPass24MP' ./pipeline/
	$(GOENV) $(GO) test $(BENCH_FLAGS) -benchtime 3x -bench 'BenchmarkSampleFiles|BenchmarkPreviewFits' ./pipeline/
	$(GOENV) $(GO) test $(BENCH_FLAGS) -benchtime 5x -bench 'BenchmarkUnpack24MP' ./pipeline/internal/libraw/
	$(GOENV) $(GO) test $(BENCH_FLAGS) -bench 'BenchmarkJPEG24MP' ./pipeline/encode/
	$(GOENV) $(GO) test $(BENCH_FLAGS) -bench 'BenchmarkWholeFrame24MP' ./pipeline/
	$(GOENV) $(GO) test $(BENCH_FLAGS) -bench 'BenchmarkDemosaicQuality|BenchmarkDemosaic24MP|BenchmarkDemosaicSmall' ./pipeline/
	$(GOENV) $(GO) test $(BENCH_FLAGS) -bench 'BenchmarkRawPath24MP' ./pipeline/
	$(GOENV) $(GO) test $(BENCH_FLAGS) -benchtime 3x -bench 'BenchmarkRCDKernel' ./pipeline/demosaic/
	$(GOENV) $(GO) test $(BENCH_FLAGS) -bench 'BenchmarkBudget45MP|BenchmarkRerun1000|BenchmarkTiny1000|BenchmarkPreviewThumbs60|BenchmarkVariants24MP' ./cmd/rawbatch/
	$(GOENV) $(GO) test $(BENCH_FLAGS) -bench 'BenchmarkThreads45MP|BenchmarkQueue60' ./cmd/rawbatch/
	PEERS_DOC=docs/performance.md scripts/peers.sh

clean:
	rm -rf bin out
