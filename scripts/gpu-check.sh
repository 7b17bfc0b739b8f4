#!/usr/bin/env bash
# The one script the GPU machine runs: builds stoker with its CUDA backend there, runs the
# GPU tests and the CPU/GPU parity harness, compute-sanitizer, the GPU benchmarks and the
# torchvision comparisons, and prints a short table at the end.
#
# usage: scripts/gpu-check.sh [env] [build] [tests] [bench] [torch] [sanitizer] [ops] [opbench] [presets]
#        [loaders] [pipeline] [profile] [ab] [memcheck_ops] [stacks] [arms] [ceiling] [exec] [pytest_gpu]
#        [sampling] [sanitizers] [perf]
#        (memcheck_ops, the Python parity tests under compute-sanitizer, stacks, arms, ceiling, exec,
#        pytest_gpu (the whole Python suite on the GPU), sampling, sanitizers (racecheck and
#        synccheck over gpu_tests, memcheck over every preset) and perf (docs/performance.md's
#        GPU half: bench/performance.sh --gpu-only) are only run when named)
#        (no argument: all of them, in that order; build is implied by the others)
# Needs: nvcc + CUDA 12/13 with nvJPEG, cmake, ninja, python3 with numpy + Pillow (torch
# for the comparisons). libjpeg-turbo / libspng / cmocka development files are taken from
# Debian packages in .deps/ when the machine lacks them (DESIGN.md section 7):
#   mkdir -p .deps && cd .deps && apt-get download libturbojpeg0 libturbojpeg0-dev \
#     libjpeg62-turbo libjpeg62-turbo-dev libspng0 libspng-dev libcmocka0 libcmocka-dev \
#     pkgconf pkgconf-bin libpkgconf3 zlib1g-dev
# Logs go to $OUT (the device tool's output folder) or ./gpu-out.
set -u -o pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUTDIR=${OUT:-$ROOT/gpu-out}
BUILD=${STK_GPU_BUILD:-/tmp/stk-build-gpu}
DATA=${STK_GPU_DATA:-/tmp/stk-imagenet-like}
EXTRA=/tmp/stk-extra-jpegs
DEPS=/tmp/stk-deps
mkdir -p "$OUTDIR"
LOG=$OUTDIR/gpu-check.log
: >"$LOG"
want() { [ $# -eq 0 ] && return 0; [ -z "$STEPS" ] || [[ " $STEPS " == *" $1 "* ]]; }
STEPS="$*"
named() { [[ " $STEPS " == *" $1 "* ]]; }  # steps that a plain run (no argument) leaves out
SUMMARY=()
note() { SUMMARY+=("$1"); }

# Whole-run budget in seconds ($STK_GPU_DEADLINE, default 570): a step gets at most what
# is left minus 15 s, so the table below is always printed.
START=$(date +%s)
DEADLINE=${STK_GPU_DEADLINE:-570}

# step NAME TIMEOUT CMD...: runs with a time limit, output to the console and the log.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$(( DEADLINE - ($(date +%s) - START) - 15 ))
  if [ $left -lt 10 ]; then
    echo "== $name: skipped (time budget spent)" | tee -a "$LOG"
    note "$(printf '%-12s skipped (budget)' "$name")"
    return 124
  fi
  [ $limit -gt $left ] && limit=$left
  echo "== $name: $*" | tee -a "$LOG"
  local t0=$(date +%s)
  timeout "$limit" "$@" 2>&1 | tee -a "$LOG" "$OUTDIR/$name.log"
  local rc=${PIPESTATUS[0]} t=$(( $(date +%s) - t0 ))
  echo "== $name: exit $rc after ${t}s" | tee -a "$LOG"
  note "$(printf '%-12s exit %-3s %4ss' "$name" "$rc" "$t")"
  return $rc
}

export PATH=/usr/local/cuda/bin:$PATH
export CUDACXX=${CUDACXX:-/usr/local/cuda/bin/nvcc}

if want env; then
  {
    echo "== env"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader || true
    nvcc --version | tail -2
    ls /usr/local/cuda/lib64/libnvjpeg* 2>&1 | head -4
    command -v compute-sanitizer cmake ninja pkg-config gcc || true
    python3 -c 'import torch, torchvision, numpy, PIL; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.cuda.is_available(), "numpy", numpy.__version__, "Pillow", PIL.__version__)' 2>&1 | tail -1
    nproc
  } 2>&1 | tee -a "$LOG"
fi

# ---- dependencies from .deps/*.deb, unpacked into a prefix ----
PKGCFG_ARG=()
if ls .deps/*.deb >/dev/null 2>&1; then
  mkdir -p "$DEPS"
  for f in .deps/*.deb; do dpkg -x "$f" "$DEPS"; done
  # A -dev package's libX.so is a link to the runtime package's libX.so.N, which is not
  # carried when the machine has it (zlib): point dangling links at the machine's copy, so
  # the linker does not fall back to the static libX.a.
  for l in "$DEPS"/usr/lib/x86_64-linux-gnu/*.so; do
    if [ -L "$l" ] && [ ! -e "$l" ]; then
      sys=$(ls /lib/x86_64-linux-gnu/"$(basename "$l")".[0-9]* /usr/lib/x86_64-linux-gnu/"$(basename "$l")".[0-9]* 2>/dev/null | head -1)
      [ -n "$sys" ] && ln -sf "$sys" "$l"
    fi
  done
  for pc in "$DEPS"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc "$DEPS"/usr/share/pkgconfig/*.pc; do
    [ -f "$pc" ] && sed -i -E "s#(=|-I|-L)/usr#\\1$DEPS/usr#g" "$pc"
  done
  export CMAKE_PREFIX_PATH=$DEPS/usr
  # Debian keeps jconfig.h under the multiarch folder; without this the compiler finds the
  # machine's own (libjpeg 8 API) and the Debian jerror.h / libjpeg.so.62 disagree with it
  export CPATH=$DEPS/usr/include/x86_64-linux-gnu${CPATH:+:$CPATH}
  export PKG_CONFIG_PATH=$DEPS/usr/lib/x86_64-linux-gnu/pkgconfig:$DEPS/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export LD_LIBRARY_PATH=$DEPS/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  if ! command -v pkg-config >/dev/null && [ -x "$DEPS/usr/bin/pkgconf" ]; then
    PKGCFG_ARG=(-DPKG_CONFIG_EXECUTABLE="$DEPS/usr/bin/pkgconf")
  fi
fi
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# ---- FFmpeg and libsndfile for the GPU machine, which has neither: a prefix in .devlibs/
#      (carried; ignored by git), made on the development machine from Debian's sources and
#      packages by scripts/make_devlibs.sh. Its .pc files are pointed at where it lies here.
if [ -d .devlibs/lib/pkgconfig ]; then
  sed -i "s#^prefix=.*#prefix=$ROOT/.devlibs#" .devlibs/lib/pkgconfig/*.pc
  export PKG_CONFIG_PATH=$ROOT/.devlibs/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export LD_LIBRARY_PATH=$ROOT/.devlibs/lib:$LD_LIBRARY_PATH
  export PATH=$ROOT/.devlibs/bin:$PATH
fi

# ---- the benchmark dataset (in the background while building) ----
DATA_PID=
if (want bench || want tests || want torch || want sanitizer || want pipeline || want ops || want presets || want loaders || want profile || want ab || want memcheck_ops || want stacks || want arms || want ceiling || want exec || want perf || named sanitizers || named pytest_gpu) && [ ! -d "$DATA" ]; then
  (
    for i in 0 1 2 3 4 5 6 7; do
      python3 scripts/make_dataset.py "$DATA/p$i" --count 250 --seed "$i" &
    done
    wait
    # unusual files for the decoder's fallbacks
    mkdir -p "$EXTRA"
    python3 - "$EXTRA" <<'EOF'
import sys
from PIL import Image
out = sys.argv[1]
im = Image.open("data/photos/rocket.jpg").convert("RGB")
im.save(f"{out}/progressive.jpg", quality=90, progressive=True)
im.convert("CMYK").save(f"{out}/cmyk.jpg", quality=90)
im.convert("L").save(f"{out}/gray.jpg", quality=90)
im.save(f"{out}/q95_444.jpg", quality=95, subsampling=0)
im.save(f"{out}/q90_422.jpg", quality=90, subsampling=1)
open(f"{out}/not_an_image.jpg", "wb").write(b"hello, this is not a JPEG" * 10)
EOF
  ) >"$OUTDIR/dataset.log" 2>&1 &
  DATA_PID=$!
fi

# ---- build ----
BUILD_OK=1
if want build || want tests || want bench || want sanitizer || want pipeline || want ops || want opbench || want presets || want profile || want ab || want memcheck_ops || want stacks || want arms || want ceiling || want exec || want perf || named sanitizers || named pytest_gpu; then
  step configure 180 cmake -S . -B "$BUILD" -G Ninja -DSTK_BUILD_PYTHON=ON -DPython3_EXECUTABLE="$(command -v python3)" \
    -DCMAKE_BUILD_TYPE=Release -DSTK_CUDA_ARCHS="${STK_GPU_ARCHS:-90-real}" "${PKGCFG_ARG[@]}" || BUILD_OK=0
  [ $BUILD_OK = 1 ] && { step build 300 ninja -C "$BUILD" || BUILD_OK=0; }
  if [ $BUILD_OK = 1 ]; then
    echo "exported symbols: $(nm -D --defined-only "$BUILD/libstoker_cuda.so" | awk '{print $3}' | tr '\n' ' ')" | tee -a "$LOG"
    echo "libstoker_cuda.so needs: $(ldd "$BUILD/libstoker_cuda.so" | awk '{print $1}' | tr '\n' ' ')" | tee -a "$LOG"
  fi
fi
if [ -n "$DATA_PID" ]; then
  wait "$DATA_PID"
  tail -n 8 "$OUTDIR/dataset.log" | tee -a "$LOG"
fi

if [ $BUILD_OK = 1 ] && want tests; then
  step host_emul 60 "$BUILD/host_emul"
  step gpu_tests 240 "$BUILD/gpu_tests" --dataset "$DATA" --extra "$EXTRA"
fi
if [ $BUILD_OK = 1 ] && want bench; then
  step gpu_bench 240 "$BUILD/gpu_bench" "$DATA" --batch 256 --epochs 3 --threads 15
fi
if want torch; then
  step torchvision 240 env PYTHONUNBUFFERED=1 python3 bench/bench_gpu.py "$DATA" --batch 256 --epochs 3 --workers 16
fi
# (--report-api-errors no: the bad-input tests provoke CUDA API errors on purpose, e.g.
#  device 99, a 1 PiB allocation; memory errors and leaks are still reported)
if [ $BUILD_OK = 1 ] && want sanitizer; then
  step memcheck 300 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 --report-api-errors no \
    "$BUILD/gpu_tests" --small --no-bad-inputs --dataset "$DATA"
  step memcheck_pipe 240 compute-sanitizer --tool memcheck --error-exitcode 9 --report-api-errors no \
    "$BUILD/test_gpu_pipeline"
fi
# racecheck (shared-memory hazards) and synccheck (barriers) over the GPU tests' kernels,
# and memcheck over one short run of every GPU preset (issue 19)
if [ $BUILD_OK = 1 ] && named sanitizers; then
  step sanitizers 480 scripts/gpu_sanitizers.sh "$BUILD" "$DATA" "$OUTDIR" "${STK_SAN_SECONDS:-420}"
fi

# ---- per-operator GPU tests (Python, CPU vs GPU parity) and benchmarks (bench_*) ----
if [ $BUILD_OK = 1 ] && want ops; then
  XDIST=(); python3 -c 'import xdist' 2>/dev/null && XDIST=(-n 14)  # tests in 14 processes where pytest-xdist is
  step gpu_ops_py 300 env PYTHONPATH="$ROOT/python" STK_BUILD_DIR="$BUILD" python3 -m pytest -q -p no:cacheprovider \
    "${XDIST[@]}" --timeout 120 -rf tests/python/test_gpu_*.py
fi
if [ $BUILD_OK = 1 ] && want opbench; then
  for b in "$BUILD"/bench_*; do
    [ -x "$b" ] && step "$(basename "$b")" 120 "$b" --batch 256
  done
fi

# ---- pipelines compared on the GPU (interleaved rounds, medians) and the CPU loaders
#      doing the same policies (issue 6: <= 10% over basic@gpu, >= 4x a 16-worker loader) ----
if [ $BUILD_OK = 1 ] && want presets; then
  step presets 240 env PYTHONUNBUFFERED=1 python3 bench/bench_gpu_presets.py --stoker "$BUILD/stoker" --data "$DATA" \
    --rounds 3 --epochs 2 ${STK_CEILING:+--ceiling $STK_CEILING} \
    basic bench/pipelines/basic_gpu_hw075.txt randaugment autoaugment trivialaugment
fi
if want loaders; then
  step loaders 200 env PYTHONUNBUFFERED=1 python3 bench/bench_autoaug_cpu_vs_torch.py --data "$DATA" --threads 16 \
    --batch 256 --repeats 1 --only torchvision,timm
fi

# ---- the whole pipeline on the GPU: C parity test, torch hand-off, stoker bench ----
if [ $BUILD_OK = 1 ] && want pipeline; then
  step gpu_pipeline 120 "$BUILD/test_gpu_pipeline"
  step torch_dlpack 180 env PYTHONPATH="$ROOT/python" STK_BUILD_DIR="$BUILD" python3 -m pytest -q -p no:cacheprovider \
    tests/python/test_gpu_torch.py
  for preset in decode basic-full basic randaugment autoaugment trivialaugment; do
    step "stk_$preset" 120 "$BUILD/stoker" bench --data "$DATA" --pipeline $preset --device gpu --batch-size 256 \
      --threads 15 --epochs 3 --json
  done
  step stk_cpu16 120 "$BUILD/stoker" bench --data "$DATA" --pipeline basic --device cpu --batch-size 256 --threads 16 \
    --epochs 1 --json
  step tv_loader 200 env PYTHONUNBUFFERED=1 python3 bench/bench_torchvision.py "$DATA" --workers 16 --batch 256 \
    --batches 12 --skip-decode
fi

# ---- the Python GPU tests (every operator's GPU parity, the GPU stage, torch hand-off),
#      and why sampling matters (a small classifier on a class-sorted folder; CPU, torch) ----
if [ $BUILD_OK = 1 ] && named pytest_gpu; then
  # STK_PYTEST_ARGS: which tests (default: the whole suite, stopping at the first failure)
  # shellcheck disable=SC2086
  step pytest_gpu 300 env PYTHONPATH="$ROOT/python" STK_BUILD_DIR="$BUILD" python3 -m pytest -q -p no:cacheprovider \
    ${STK_PYTEST_ARGS:--x tests/python}
fi
if named sampling; then
  step sampling 240 env PYTHONUNBUFFERED=1 PYTHONPATH="$ROOT/python" STK_BUILD_DIR="$BUILD" \
    python3 bench/bench_sampling_training.py --epochs 4 --per-class 240
fi

# ---- where a GPU pipeline's time goes: the stages' threads, at 15 / 8 / 4 CPU threads,
#      against bare nvJPEG (issue 4's 90% target); more epochs than `pipeline` for steadier rates;
#      the automatic engines / hybrid split (default) against fixed hw_decoder_load 0.75 and 1.0 ----
if [ $BUILD_OK = 1 ] && want profile; then
  step prof_bare 120 "$BUILD/gpu_bench" "$DATA" --batch 256 --epochs 8 --threads 15 --only bare
  for t in 15 8 4; do
    step "prof_basic_t$t" 90 "$BUILD/stoker" bench --data "$DATA" --pipeline basic --device gpu --batch-size 256 \
      --threads $t --epochs 12
  done
  step prof_decode 90 "$BUILD/stoker" bench --data "$DATA" --pipeline decode --device gpu --batch-size 256 --threads 15 --epochs 12
  for load in 075 10; do
    step prof_hw$load 90 "$BUILD/stoker" bench --data "$DATA" --pipeline bench/pipelines/basic_gpu_hw$load.txt --device gpu \
      --batch-size 256 --threads 15 --epochs 12
  done
fi
# ---- issue 4's ratio, robustly: bare nvJPEG (from pageable and from pinned copies of the
#      files) and the basic pipeline (automatic split, hw_decoder_load 1.0 and 0.75, and
#      with its host pool left pageable) interleaved, every round measuring its own ceilings,
#      at 15 and at 8 CPU threads; the per-pipeline figure is the median same-round ratio.
#      60 epochs of the 2000 files (~5 s a run): at 10 the start (the host pool's blocks
#      growing and being page-locked) weighed on the pipelines' rates ----
if [ $BUILD_OK = 1 ] && want ab; then
  for t in ${STK_AB_THREADS:-15 8}; do
    step "ab_t$t" 240 env PYTHONUNBUFFERED=1 python3 bench/bench_gpu_presets.py --stoker "$BUILD/stoker" --data "$DATA" \
      --rounds ${STK_AB_ROUNDS:-4} --epochs ${STK_AB_EPOCHS:-60} --threads $t --bare "$BUILD/gpu_bench" --bare-pinned \
      basic bench/pipelines/basic_gpu_hw10.txt bench/pipelines/basic_gpu_hw075.txt
  done
fi
# ---- where the thread feeding the engines spends its time (only when named): per-thread
#      CPU time (bench/tools/stack_sample.py; cuda-gdb stack samples too with STK_SS_SAMPLES=N)
#      for bare decoding from pinned copies and for GPU pipelines at 15 and 8 CPU threads,
#      with the machine's CPU topology (SMT siblings share a core's execution units) ----
if [ $BUILD_OK = 1 ] && named stacks; then
  { lscpu | grep -E "^(Model name|Socket|Core|Thread|CPU\(s\)|NUMA)"; echo "SMT sibling sets: $(cat /sys/devices/system/cpu/cpu*/topology/thread_siblings_list | sort -un | tr '\n' ' ')"; } 2>&1 | tee -a "$LOG"
  SS=(python3 bench/tools/stack_sample.py --warmup 5 --window ${STK_SS_WINDOW:-12} --samples ${STK_SS_SAMPLES:-0} --let-finish)
  step stacks_bare 90 "${SS[@]}" -- "$BUILD/gpu_bench" "$DATA" --batch 256 --epochs 300 --threads 15 --only bare --bare-pinned
  for run in ${STK_SS_RUNS:-basic:15 basic:8 bench/pipelines/basic_gpu_hw10.txt:15 decode:15}; do
    p=${run%:*} t=${run##*:}
    step "stacks_$(basename "$p" .txt)_t$t" 90 "${SS[@]}" -- "$BUILD/stoker" bench --data "$DATA" --pipeline "$p" --device gpu \
      --batch-size 256 --threads "$t" --epochs 250
  done
  step stacks_bare2 90 "${SS[@]}" -- "$BUILD/gpu_bench" "$DATA" --batch 256 --epochs 300 --threads 15 --only bare --bare-pinned
fi
# ---- the automatic split against the engines alone, long runs (only when named): every
#      round bare decoding from pinned copies, then basic@gpu with the automatic split
#      (its share in the stats' decode_hw_share) and with hw_decoder_load 1.0 ----
if [ $BUILD_OK = 1 ] && named arms; then
  for r in $(seq ${STK_ARMS_ROUNDS:-2}); do
    for t in ${STK_ARMS_THREADS:-15 8}; do
      step "arms_bare_r${r}_t$t" 60 "$BUILD/gpu_bench" "$DATA" --batch 256 --epochs 30 --threads 15 --only bare --bare-pinned
      for p in basic bench/pipelines/basic_gpu_hw10.txt; do
        step "arms_$(basename $p .txt)_r${r}_t$t" 60 "$BUILD/stoker" bench --data "$DATA" \
          --pipeline "$p" --device gpu --batch-size 256 --threads "$t" --epochs ${STK_ARMS_EPOCHS:-100}
      done
    done
  done
fi
# ---- the 90% target, interleaved (only when named): bare nvJPEG from pinned memory (the
#      files in order, and batches drawn at random each epoch as a shuffling reader makes
#      them: 2.5% slower, bench/RESULTS.md fifth session) and from pageable memory against
#      basic@gpu (automatic split) and hw_decoder_load 1.0, $STK_CEILING_ROUNDS rounds; medians, same-round
#      ratios and best/best (bench/interleave.py). Both sides leave their first epoch
#      untimed (gpu_bench runs one before the clock starts, the pipelines skip 8 batches:
#      --warmup 8, the 2000-file dataset's first epoch, when the host pool grows and
#      page-locks its blocks) and time 100 epochs, so that both runs last about as long
#      (the machine's slow spells only slow: a shorter run is likelier to miss them) ----
if [ $BUILD_OK = 1 ] && named ceiling; then
  B="$BUILD/gpu_bench $DATA --batch 256 --epochs 100 --threads 15 --only bare"
  S="$BUILD/stoker bench --data $DATA --device gpu --batch-size 256 --epochs 100 --threads 15 --warmup 8 --pipeline"
  step ceiling 540 python3 bench/interleave.py --rounds "${STK_CEILING_ROUNDS:-6}" \
    --show '[0-9.]+ ms per call|decode_hw_call +[0-9.]+' \
    bare_pinned="$B --bare-pinned" bare_pinned_shuffled="$B --bare-pinned --bare-shuffle" bare_pageable="$B" \
    basic="$S basic" hw10="$S bench/pipelines/basic_gpu_hw10.txt"
fi
# ---- docs/performance.md's GPU half (only when named): bare nvJPEG (pinned, pageable),
#      basic@gpu, randaugment@gpu, the 16-worker torchvision DataLoader and DALI where
#      installed, interleaved ($STK_PERF_ROUNDS rounds, default 3); the Markdown table goes
#      to $OUTDIR/performance-gpu.md ----
if [ $BUILD_OK = 1 ] && named perf; then
  step perf 540 env BUILD="$BUILD" GPU_ROUNDS="${STK_PERF_ROUNDS:-3}" bash bench/performance.sh --gpu-only \
    --data "$DATA" --out "$OUTDIR/performance-gpu.md"
fi
# ---- exec (only when named): $STK_EXEC, a bash command line, run with this script's
#      environment (the dependencies' library path, $BUILD, $DATA, $EXTRA), for experiments
#      that need no step of their own ----
if [ $BUILD_OK = 1 ] && named exec; then
  export BUILD DATA EXTRA
  step exec 500 bash -c "${STK_EXEC:-echo STK_EXEC is empty}"
fi
# The per-operator parity tests under compute-sanitizer (torch's hand-off test excluded:
# torch's own start-up under memcheck takes minutes and it launches no stoker kernel).
# One sanitizer process per test file or shard of a file (FILE@I/N), all at once:
# memcheck's cost is on the host (one core per process), so they run side by side on the
# machine's cores; each log (mc_*.log) ends in its own ERROR SUMMARY.
# $STK_MEMCHECK_FILES: the files / shards, space-separated (default: all, the big ones split).
memcheck_file() {  # FILE or FILE@I/N (the I-th of N shards, tests/python/conftest.py)
  local f=${1%@*} shard= name
  [[ $1 == *@* ]] && shard=${1#*@}
  name=$(basename "$f" .py)${shard:+_${shard/\//of}}
  timeout "$MC_LIMIT" env PYTHONPATH="$ROOT/python" STK_BUILD_DIR="$BUILD" STK_TEST_SHARD="$shard" \
    compute-sanitizer --tool memcheck --error-exitcode 9 --report-api-errors no --print-limit 30 \
    python3 -m pytest -q -p no:cacheprovider $MC_PYTEST_TIMEOUT -rf "$f" >"$OUTDIR/mc_$name.log" 2>&1
  local rc=$?
  echo "memcheck $name: exit $rc $(grep -h 'ERROR SUMMARY' "$OUTDIR/mc_$name.log" | tail -1) $(grep -hE '[0-9]+ (passed|failed|skipped|errors?)' "$OUTDIR/mc_$name.log" | grep -v 'ERROR SUMMARY' | tail -1)"
  return $rc
}
memcheck_all() {
  local pids=() f rc=0
  for f in "$@"; do memcheck_file "$f" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  grep -l 'ERROR SUMMARY: [1-9]' "$OUTDIR"/mc_*.log && rc=9
  return $rc
}
if [ $BUILD_OK = 1 ] && named memcheck_ops; then
  export -f memcheck_file memcheck_all
  export ROOT BUILD OUTDIR
  MC_PYTEST_TIMEOUT=; python3 -c 'import pytest_timeout' 2>/dev/null && MC_PYTEST_TIMEOUT="--timeout 500"
  export MC_PYTEST_TIMEOUT
  export MC_LIMIT=$(( DEADLINE - ($(date +%s) - START) - 30 ))
  [ "$MC_LIMIT" -gt 540 ] && MC_LIMIT=540
  MC_FILES=(tests/python/test_gpu_color.py@{0,1,2}/3 tests/python/test_gpu_{autoaug,filter,geometry,math}.py@{0,1}/2
    tests/python/test_gpu_conditionals.py tests/python/test_gpu_core_ops.py)
  [ -n "${STK_MEMCHECK_FILES:-}" ] && read -r -a MC_FILES <<<"$STK_MEMCHECK_FILES"
  step memcheck_ops 560 bash -c 'memcheck_all "$@"' _ "${MC_FILES[@]}"
fi

# ---- the table ----
{
  echo
  echo "================ gpu-check summary ================"
  for s in "${SUMMARY[@]}"; do echo "step  $s"; done
  grep -h -E '^(memcheck |device |RESULT|parity |host_emul |decode |gpu_tests: |dataset |make_dataset|========= ERROR SUMMARY|\{"images_per_s|\{"what|\[  (PASSED|FAILED)|# |[0-9]+ passed)' "$LOG" | sed 's/^RESULT /bench /'
} | tee "$OUTDIR/summary.txt"
