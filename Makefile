# A thin wrapper over meson: the two commands of the README and a few more.
VAULT ?= vault-sample
LISTEN ?= 127.0.0.1:8080

.PHONY: all setup build serve test test-fast bench clean

all: build

setup:
	@sh scripts/setup

build: setup
	@ninja -C build

# Serves vault-sample at http://$(LISTEN).
serve: build
	./build/quire serve --vault $(VAULT) --listen $(LISTEN)

# Every test in a release build, then again under ASan and UBSan, then each
# libFuzzer target for 20 s under both (tests/fuzz/run: about 2 minutes on
# two cores with the build; skipped without clang, which scripts/setup
# installs; fails on any crash, leak or timeout).
test: setup
	ninja -C build
	meson test -C build --print-errorlogs
	ninja -C build-asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C build-asan --print-errorlogs --timeout-multiplier 4
	@python3 scripts/test-summary build build-asan
	python3 tests/fuzz/run --time=20

test-fast: build
	meson test -C build --print-errorlogs

# The benchmark suite (bench/README.md): results in bench/results/, figures
# and plots in docs/performance.md. About 35 minutes; bench/run --quick: 2.
bench: build
	python3 bench/run

clean:
	rm -rf build build-asan build-fuzz
