# Thin wrapper around CMake. `make demo` and `make test` work on a fresh machine.
BUILD ?= build
JOBS ?= $(shell nproc)
PY := .venv/bin/python

.PHONY: all setup build test test-c test-python demo bench clean sanitize

all: build

setup:
	@scripts/setup.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=$(abspath $(PY))

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@if [ -d tests/python ] && ls tests/python/test_*.py >/dev/null 2>&1; then \
	  STK_BUILD_DIR=$(abspath $(BUILD)) $(PY) -m pytest -q tests/python; fi

# ASan + UBSan build of the C tests.
sanitize: setup
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSTK_SANITIZE=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure

demo: build
	scripts/demo.sh

clean:
	rm -rf $(BUILD) build-asan
