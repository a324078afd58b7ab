# A thin wrapper over meson: the commands of the README and a few more.
#
#   make serve [VAULT=~/notes] [LISTEN=0.0.0.0:9000]   build, then serve a vault
#   make install [PREFIX=/usr/local] [DESTDIR=]         the binary, man pages,
#                                                       completions, the unit
#   make test                                           every test
#
# serve, build and install set up only what building and serving need
# (scripts/setup); test, test-fast and bench also what the tests need
# (scripts/setup --tests: browsers, servers, shells...).
VAULT ?= vault-sample
LISTEN ?= 127.0.0.1:8080
PREFIX ?= /usr/local
DESTDIR ?=
BUILD ?= build

.PHONY: all setup setup-tests build serve install test test-fast bench clean

all: build

setup:
	@sh scripts/setup

setup-tests:
	@sh scripts/setup --tests

build: setup
	@ninja -C $(BUILD)

# Serves $(VAULT) (vault-sample, the documentation) at http://$(LISTEN).
serve: build
	./$(BUILD)/quire serve --vault $(VAULT) --listen $(LISTEN)

# Installs into $(DESTDIR)$(PREFIX): bin/quire, share/man/man1/quire*.1, the
# bash, zsh and fish completions, lib/systemd/system/quire.service and
# lib/sysusers.d/quire.conf (deploy/meson.build). A fresh clone is set up
# and built first; an existing build folder is only brought up to date (so
# `sudo make install` after `make build` installs nothing but quire). A
# PREFIX other than the build's is set with meson configure.
install:
	@[ -f $(BUILD)/build.ninja ] || sh scripts/setup
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD) --buildtype=release
	@prefix=$$(meson introspect $(BUILD) --buildoptions | python3 -c 'import json, sys; \
		print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))'); \
	if [ "$$prefix" != "$(PREFIX)" ]; then meson configure $(BUILD) -Dprefix=$(PREFIX); fi
	@ninja -C $(BUILD)
	DESTDIR="$(DESTDIR)" meson install -C $(BUILD) --no-rebuild --quiet

# Every test in a release build, then again under ASan and UBSan, then each
# libFuzzer target for 20 s under both (tests/fuzz/run: about 2 minutes on
# two cores with the build; skipped without clang, which scripts/setup
# installs; fails on any crash, leak or timeout).
test: setup-tests
	ninja -C build
	meson test -C build --print-errorlogs
	ninja -C build-asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C build-asan --print-errorlogs --timeout-multiplier 4
	@python3 scripts/test-summary build build-asan
	python3 tests/fuzz/run --time=20

test-fast: setup-tests
	ninja -C build
	meson test -C build --print-errorlogs

# The benchmark suite (bench/README.md): results in bench/results/, figures
# and plots in docs/performance.md. About 35 minutes; bench/run --quick: 2.
bench: setup-tests
	ninja -C build
	python3 bench/run

clean:
	rm -rf build build-asan build-fuzz
