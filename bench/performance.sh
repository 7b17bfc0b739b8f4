#!/usr/bin/env bash
# The figures of docs/performance.md, regenerated: stoker's pipelines against bare decoding,
# a torchvision-style loader and NVIDIA DALI, on the same files, in interleaved rounds
# (every command once per round, A B C A B C ...), printed as Markdown tables with the
# median and the range over the rounds and the same-round ratios (bench/interleave.py).
#
# usage: bench/performance.sh [--rounds N] [--threads N] [--data DIR] [--cpu-only | --gpu-only]
#                             [--out FILE]
#   CPU half (always, unless --gpu-only): on N threads / processes (default: all cores)
#     bare       build/bare_decode: full-image libjpeg-turbo decoding, files in memory
#     stoker     build/stoker bench --pipeline basic | randaugment (batch 32, 2 epochs)
#     torchvision  a DataLoader with N workers doing the same work, when `$PYTHON` imports
#                torchvision; otherwise the same per-sample work in Pillow + NumPy on N
#                processes (bench/perf_baselines.py pil)
#     DALI       the same pipelines on DALI's CPU backend, when $DALI_PYTHON (default
#                /work/dali-venv/bin/python, else python3) imports nvidia.dali; else skipped
#   GPU half (when nvidia-smi sees a GPU and $BUILD/gpu_bench exists; on the GPU machine run
#   it as `scripts/gpu-check.sh perf`, which passes its build and dataset):
#     bare nvJPEG (gpu_bench --only bare) from pinned and from pageable copies of the files,
#     stoker basic@gpu and randaugment@gpu (batch 256, 15 threads, 100 epochs, first epoch
#     untimed), torchvision's DataLoader with 16 workers (batch 256, basic and RandAugment),
#     DALI's mixed-decoding pipelines when installed.
# Environment: BUILD (default build), PYTHON (default .venv/bin/python, else python3),
#   DALI_PYTHON, GPU_ROUNDS (default 3), ROUND_TIMEOUT (seconds one command may run,
#   default 300).
# Make the machine as quiet as you can; on a shared machine read the ranges, not only the
# medians. Takes about 6 minutes (CPU half, 2 busy cores, 5 rounds) and 6 minutes (GPU
# half, 3 rounds, estimated: not yet run on a GPU).
set -u -o pipefail
cd "$(dirname "$0")/.."

ROUNDS=5 THREADS=$(nproc) DATA=bench/data/imagenet-like OUTFILE= CPU=1 GPU=auto
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --out) OUTFILE=$2; shift 2 ;;
    --cpu-only) GPU=0; shift ;;
    --gpu-only) CPU=0; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "performance.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
DALI_PYTHON=${DALI_PYTHON:-$( [ -x /work/dali-venv/bin/python ] && echo /work/dali-venv/bin/python || echo python3 )}
TO=${ROUND_TIMEOUT:-300}
GPU_ROUNDS=${GPU_ROUNDS:-3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

for f in "$BUILD/stoker" $([ "$CPU" = 1 ] && echo "$BUILD/bare_decode"); do
  [ -x "$f" ] || { echo "performance.sh: $f missing: run make build (or set BUILD)" >&2; exit 1; }
done
if [ ! -d "$DATA" ]; then
  "$PYTHON" scripts/make_dataset.py "$DATA" --count 2000 --seed 3 || exit 1
fi
if [ "$GPU" = auto ]; then
  GPU=0
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && [ -x "$BUILD/gpu_bench" ]; then GPU=1; fi
fi

# ---- what this machine is ----
{
  echo "## Machine"
  echo
  echo "- date (UTC): $(date -u '+%Y-%m-%d %H:%M')"
  echo "- commit: $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo ' (uncommitted changes)')"
  echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- data: $DATA, $(find "$DATA" -name '*.jpg' | wc -l) JPEGs, mean $(find "$DATA" -name '*.jpg' -printf '%s\n' | awk '{s+=$1} END {printf "%.1f", s/NR/1000}') KB"
  echo "- libjpeg-turbo: $(dpkg-query -W -f '${Version}' libturbojpeg0 2>/dev/null || echo '?'); Python baselines: $("$PYTHON" -c 'import PIL, numpy; print("Pillow", PIL.__version__, "NumPy", numpy.__version__)' 2>/dev/null)"
  if [ "$GPU" = 1 ]; then
    echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
  fi
  [ "$CPU" = 1 ] && echo "- CPU half: $ROUNDS rounds, $THREADS threads / processes"
  [ "$GPU" = 1 ] && echo "- GPU half: $GPU_ROUNDS rounds (GPU_ROUNDS)"
} | tee "$TMP/head.md"

# ---- the torchvision-style loader and DALI, where they are ----
if "$PYTHON" -c 'import torchvision' 2>/dev/null; then
  TV=("$PYTHON bench/perf_baselines.py torchvision" "torchvision DataLoader")
else
  TV=("$PYTHON bench/perf_baselines.py pil" "Pillow+NumPy")
fi
HAVE_DALI=0
"$DALI_PYTHON" -c 'import nvidia.dali' 2>/dev/null && HAVE_DALI=1
DALI_VERSION=$("$DALI_PYTHON" -c 'import nvidia.dali as d; print(d.__version__)' 2>/dev/null)

# ---- CPU half ----
if [ "$CPU" = 1 ]; then
  T=$THREADS D=$DATA
  S="$BUILD/stoker bench --data $D --device cpu --threads $T --batch-size 32 --epochs 2 --pipeline"
  ARGS=(
    "bare=$BUILD/bare_decode $D $T 2"
    "stoker basic=$S basic"
    "${TV[1]} basic=${TV[0]} basic --data $D --procs $T"
    "stoker randaugment=$S randaugment"
    "${TV[1]} randaugment=${TV[0]} randaugment --data $D --procs $T"
  )
  if [ "$HAVE_DALI" = 1 ]; then
    ARGS+=("DALI basic=$DALI_PYTHON -W ignore bench/perf_baselines.py dali basic --data $D --threads $T"
           "DALI randaugment=$DALI_PYTHON -W ignore bench/perf_baselines.py dali randaugment --data $D --threads $T")
  fi
  echo; echo "## CPU ($T threads / processes)"
  "$PYTHON" bench/interleave.py --rounds "$ROUNDS" --timeout "$TO" --json "$TMP/cpu.json" "${ARGS[@]}"
  {
    echo; echo "## CPU: $T threads / processes, $ROUNDS interleaved rounds"; echo
    "$PYTHON" bench/perf_table.py "$TMP/cpu.json" --col "vs bare decode=bare" \
      --pair "vs ${TV[1]}, same work=${TV[1]} {}" --pair "vs DALI, same work=DALI {}"
    echo
    echo "Ratios: the median of same-round ratios (their range over the rounds)."
    [ "$HAVE_DALI" = 1 ] && echo "DALI: $DALI_VERSION ($DALI_PYTHON)." || echo "DALI: not installed (set DALI_PYTHON to a Python that imports nvidia.dali); skipped."
    [ "${TV[1]}" = Pillow+NumPy ] && echo "torchvision is not installed for $PYTHON: its per-sample work (PIL decode, RandomResizedCrop, flip, [RandAugment,] normalise) ran in Pillow + NumPy on $T processes instead (bench/perf_baselines.py pil)."
  } >"$TMP/cpu_section.md"
fi

# ---- GPU half ----
if [ "$GPU" = 1 ]; then
  D=$DATA
  B="$BUILD/gpu_bench $D --batch 256 --epochs 100 --threads 15 --only bare"
  S="$BUILD/stoker bench --data $D --device gpu --batch-size 256 --epochs 100 --threads 15 --warmup 8 --pipeline"
  TVG="python3 bench/bench_torchvision.py $D --workers 16 --batch 256 --batches 40 --skip-decode"
  ARGS=(
    "bare nvJPEG pinned=$B --bare-pinned"
    "bare nvJPEG pageable=$B"
    "stoker basic@gpu=$S basic"
    "stoker randaugment@gpu=$S randaugment"
  )
  if python3 -c 'import torchvision' 2>/dev/null; then
    ARGS+=("torchvision 16 workers basic@gpu=$TVG" "torchvision 16 workers randaugment@gpu=$TVG --policy randaugment")
  fi
  if [ "$HAVE_DALI" = 1 ]; then
    ARGS+=("DALI basic@gpu=$DALI_PYTHON -W ignore bench/perf_baselines.py dali basic --device gpu --batch 256 --threads 15 --epochs 20 --data $D"
           "DALI randaugment@gpu=$DALI_PYTHON -W ignore bench/perf_baselines.py dali randaugment --device gpu --batch 256 --threads 15 --epochs 20 --data $D")
  fi
  echo; echo "## GPU"
  python3 bench/interleave.py --rounds "$GPU_ROUNDS" --timeout "$TO" --json "$TMP/gpu.json" "${ARGS[@]}"
  {
    echo; echo "## GPU: batch 256, 15 CPU threads, $GPU_ROUNDS interleaved rounds"; echo
    python3 bench/perf_table.py "$TMP/gpu.json" --col "vs bare nvJPEG (pinned)=bare nvJPEG pinned" \
      --col "vs bare nvJPEG (pageable)=bare nvJPEG pageable" \
      --pair "vs torchvision (16 workers), same work=torchvision 16 workers {}" --pair "vs DALI, same work=DALI {}"
    [ "$HAVE_DALI" = 1 ] && echo && echo "DALI: $DALI_VERSION." || { echo; echo "DALI: not installed; skipped."; }
  } >"$TMP/gpu_section.md"
elif [ "$CPU" = 0 ]; then
  echo "performance.sh: --gpu-only, but no GPU (nvidia-smi) or no $BUILD/gpu_bench" >&2
  exit 1
fi

echo
echo "================ Markdown ================"
echo "- load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$TMP/head.md"
cat "$TMP/head.md" "$TMP"/cpu_section.md "$TMP"/gpu_section.md 2>/dev/null | tee ${OUTFILE:+"$OUTFILE"}
