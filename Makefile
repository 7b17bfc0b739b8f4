# Thin wrapper around CMake. `make demo` and `make test` work on a fresh machine.
BUILD ?= build
JOBS ?= $(shell nproc)
PY := .venv/bin/python

.PHONY: all setup build test demo bench clean sanitize tsan stubs format format-check fuzz fuzz-seeds

all: build

setup:
	@scripts/setup.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=$(abspath $(PY))

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: build
	$(PY) scripts/check_layers.py
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@if [ -d tests/python ] && ls tests/python/test_*.py >/dev/null 2>&1; then \
	  STK_BUILD_DIR=$(abspath $(BUILD)) $(PY) -m pytest -q tests/python; fi

# ASan + UBSan build of the C tests.
sanitize: setup
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSTK_SANITIZE=ON -DSTK_BUILD_PYTHON=OFF
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure

# ThreadSanitizer build of the executor and end-to-end tests, and the remote block cache.
tsan: setup
	cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSTK_TSAN=ON -DSTK_BUILD_PYTHON=OFF
	cmake --build build-tsan -j $(JOBS) --target test_pipeline test_end_to_end test_reader test_gpu_stage_fake stk_fake_gpu test_remote
	cd build-tsan && ctest --output-on-failure -R 'test_(pipeline|end_to_end|reader|gpu_stage_fake|remote)$$'

# The fuzz targets with libFuzzer + ASan + UBSan (clang); run one with scripts/fuzz.sh.
# (`make test` and `make sanitize` replay their corpora without libFuzzer.)
fuzz: setup
	cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Release -DSTK_FUZZ=ON -DSTK_BUILD_TESTS=OFF -DSTK_BUILD_PYTHON=OFF
	cmake --build build-fuzz -j $(JOBS) --target fuzz_targets

# Rewrites the fuzzers' seed inputs (tests/fuzz/corpus/*/seed-*) from data/photos.
fuzz-seeds: setup
	$(PY) tests/fuzz/make_seeds.py

# Regenerate the Python .pyi stubs from the registry (commit them; a test checks).
stubs: build
	$(PY) -m stoker._stubgen

demo: build
	scripts/demo.sh

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz

# C, CUDA C and headers in the committed .clang-format style (Debian's clang-format 14).
FORMAT_FILES = $(shell git ls-files '*.c' '*.h' '*.cu' '*.cuh')
format:
	clang-format -i $(FORMAT_FILES)

# Fails, listing the files, when formatting would change anything (CI runs it).
format-check:
	@bad=$$(clang-format --dry-run --Werror $(FORMAT_FILES) 2>&1 | grep -o '^[^:]*\.\(c\|h\|cu\|cuh\):' | sort -u); \
	if [ -n "$$bad" ]; then echo "$$bad" | sed 's/:$$/: not formatted (make format)/'; exit 1; fi; \
	echo "format-check: $(words $(FORMAT_FILES)) files formatted"
