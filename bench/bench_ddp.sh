#!/usr/bin/env bash
# Issue 24's two-GPU figures, in one command on a machine with 2 GPUs (nvidia-h100-x2):
#   1. pipeline throughput: examples/ddp_train.py --pipeline-only on one GPU, then on both
#      (one pipeline per rank), A B A B; the ratio of the totals (target >= 1.9);
#   2. ResNet-50 bf16 DDP training: the same, A B A B; images/s per GPU on two GPUs over
#      one GPU's (target 1.0, i.e. no loss per GPU).
# Every run gives each rank the same number of pipeline threads (cores / 2 by default), so
# the one-GPU run has what each GPU has in the two-GPU run (as on a one-GPU machine of half
# the size). Rates are the example's "summary" lines: steps after --warmup, all ranks.
#
# usage: bench/bench_ddp.sh [ROUNDS]       (default 2: A B A B)
# env:   STK_DDP_DATA     data set (default /tmp/stk-ddp-data, made if missing: 16 x 500 JPEGs)
#        STK_DDP_BATCH    batch per rank (256)        STK_DDP_THREADS  threads per rank (cores/2)
#        STK_DDP_PIPE_STEPS / STK_DDP_TRAIN_STEPS  steps per run (200 / 100), STK_DDP_WARMUP (20)
#        STK_DDP_ARCH     torchvision model (resnet50)
#        STK_DDP_SYNTHETIC  1 (default): also train on one reused batch (--synthetic), the
#                         control that separates DDP's own cost from the pipeline's
#        STK_DDP_ONLY     "pipe", "train" or "pipe,train" (default): which rounds run
#        STK_DDP_TRAIN_THREADS  threads per rank in the training rounds (default: as above)
#        STK_DDP_TORCHRUN_ARGS  more arguments for torchrun (e.g. --numa-binding=node)
#        STK_DDP_EXAMPLE_ARGS   more arguments for examples/ddp_train.py (e.g.
#                         "--pipeline-device cpu": the pipelines off the GPUs, the control for
#                         what the pipeline's GPU work costs the training)
#        STK_DDP_DEVICE   cpu: a dry run of this script on a machine without GPUs (gloo, CPU
#                         pipelines; e.g. with STK_DDP_ARCH=tiny and small batches)
# Builds the extension with scripts/gpu-check.sh build first when python/stoker has none.
# Logs and results.jsonl go to $OUT (the device tool's folder) or ./gpu-out.
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 2
OUTDIR=${OUT:-$PWD/gpu-out}
mkdir -p "$OUTDIR"
RESULTS=$OUTDIR/ddp_results.jsonl
: >"$RESULTS"
ROUNDS=${1:-2}
DATA=${STK_DDP_DATA:-/tmp/stk-ddp-data}
BATCH=${STK_DDP_BATCH:-256}
CORES=$(env -u OMP_NUM_THREADS nproc)
THREADS=${STK_DDP_THREADS:-$(( CORES / 2 ))}
PIPE_STEPS=${STK_DDP_PIPE_STEPS:-200}
TRAIN_STEPS=${STK_DDP_TRAIN_STEPS:-100}
WARMUP=${STK_DDP_WARMUP:-20}
ARCH=${STK_DDP_ARCH:-resnet50}
DEVICE=${STK_DDP_DEVICE:-gpu}
SYNTHETIC=${STK_DDP_SYNTHETIC:-1}
ONLY=${STK_DDP_ONLY:-pipe,train}
TRAIN_THREADS=${STK_DDP_TRAIN_THREADS:-$THREADS}
# NVLink multicast stays off (the lending machines' rule; harmless elsewhere)
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
export TORCH_SYMM_MEM_DISABLE_MULTICAST=${TORCH_SYMM_MEM_DISABLE_MULTICAST:-1}
export NVSHMEM_DISABLE_NVLS=${NVSHMEM_DISABLE_NVLS:-1} PYTHONUNBUFFERED=1

ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$DEVICE" = gpu ] && [ "$ngpu" -lt 2 ]; then
  echo "bench_ddp: needs 2 GPUs, nvidia-smi lists $ngpu" >&2
  exit 2
fi
python3 -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision",
torchvision.__version__, "GPUs", torch.cuda.device_count())' || exit 2
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null
echo "cores $CORES, threads per rank $THREADS ($TRAIN_THREADS training), batch per rank $BATCH, $ROUNDS rounds"

if [ ! -f python/stoker/_stoker.abi3.so ] || [ ! -f python/stoker/libstoker_cuda.so ]; then
  STK_GPU_DEADLINE=400 scripts/gpu-check.sh build >"$OUTDIR/ddp_build.log" 2>&1
  tail -n 3 "$OUTDIR/ddp_build.log"
  [ -f python/stoker/libstoker_cuda.so ] || { echo "bench_ddp: the build failed" >&2; exit 3; }
fi

# the libraries the build found in .deps / .devlibs (the GPU machine lacks libsndfile and
# FFmpeg): the extension needs them at run time too, as scripts/gpu-check.sh sets them
for lib in "$PWD/.devlibs/lib" /tmp/stk-deps/usr/lib/x86_64-linux-gnu; do
  [ -d "$lib" ] && export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
done

if [ ! -d "$DATA" ]; then
  for i in $(seq -w 0 15); do
    python3 scripts/make_dataset.py "$DATA/p$i" --count 500 --seed "$((10#$i))" >/dev/null &
  done
  wait
fi
echo "data: $DATA, $(find "$DATA" -name '*.jpg' | wc -l) JPEGs"

# run NAME GPUS THREADS ARGS...: one torchrun launch; its summary line goes to $RESULTS
run() {
  local name=$1 gpus=$2 threads=$3
  shift 3
  local visible
  visible=$(seq -s, 0 $((gpus - 1)))
  echo "== $name ($gpus GPU)"
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=$visible timeout 240 python3 -m torch.distributed.run --standalone \
    --nproc_per_node="$gpus" ${STK_DDP_TORCHRUN_ARGS:-} examples/ddp_train.py --data "$DATA" --batch-size "$BATCH" \
    --threads "$threads" --warmup "$WARMUP" --epochs 1000 --device "$DEVICE" \
    ${STK_DDP_EXAMPLE_ARGS:-} "$@" \
    >"$OUTDIR/ddp_$name.log" 2>&1
  local rc=$?
  local line
  line=$(grep '"event": "summary"' "$OUTDIR/ddp_$name.log" | tail -n 1)
  if [ $rc -ne 0 ] || [ -z "$line" ]; then
    echo "   failed (exit $rc): $OUTDIR/ddp_$name.log"
    tail -n 5 "$OUTDIR/ddp_$name.log"
    return
  fi
  echo "   $line"
  echo "{\"run\": \"$name\", \"gpus\": $gpus, \"result\": $line}" >>"$RESULTS"
}

for r in $(seq 1 "$ROUNDS"); do
  [[ ",$ONLY," == *,pipe,* ]] || break
  run "pipe1_r$r" 1 "$THREADS" --pipeline-only --steps "$PIPE_STEPS"
  run "pipe2_r$r" 2 "$THREADS" --pipeline-only --steps "$PIPE_STEPS"
done
for r in $(seq 1 "$ROUNDS"); do
  [[ ",$ONLY," == *,train,* ]] || break
  run "train1_r$r" 1 "$TRAIN_THREADS" --arch "$ARCH" --steps "$TRAIN_STEPS"
  run "train2_r$r" 2 "$TRAIN_THREADS" --arch "$ARCH" --steps "$TRAIN_STEPS"
  if [ "$SYNTHETIC" = 1 ]; then
    run "synth1_r$r" 1 "$TRAIN_THREADS" --arch "$ARCH" --steps "$TRAIN_STEPS" --synthetic
    run "synth2_r$r" 2 "$TRAIN_THREADS" --arch "$ARCH" --steps "$TRAIN_STEPS" --synthetic
  fi
done

python3 - "$RESULTS" <<'EOF'
import json, statistics, sys
rows = [json.loads(x) for x in open(sys.argv[1])]
def rates(prefix, gpus):
    return [r["result"]["images_per_s_total"] for r in rows
            if r["run"].startswith(prefix) and r["gpus"] == gpus]
print("\n== bench_ddp summary (images/s, medians of the rounds)")
for kind, prefix in (("pipeline", "pipe"), ("training", "train"), ("synthetic", "synth")):
    if not rates(prefix, 1) and not rates(prefix, 2):
        continue  # not run (STK_DDP_ONLY, STK_DDP_SYNTHETIC)
    one, two = rates(prefix, 1), rates(prefix, 2)
    if not one or not two:
        print(f"{kind:9s} incomplete: 1 GPU {one}, 2 GPUs {two}")
        continue
    a, b = statistics.median(one), statistics.median(two)
    print(f"{kind:9s} 1 GPU {a:9.1f}  2 GPUs {b:9.1f} ({b / 2:8.1f} per GPU)  "
          f"ratio {b / a:.3f}  per-GPU ratio {b / 2 / a:.3f}  rounds 1 GPU {one} 2 GPUs {two}")
print("targets: pipeline ratio >= 1.9; training per-GPU ratio ~1.0 (images/s per GPU as one GPU's)")
print("synthetic: the same training on one reused batch (no pipeline): DDP's own per-GPU ratio")
EOF
