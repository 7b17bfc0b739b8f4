#!/usr/bin/env bash
# The experiments behind bench/RESULTS.md's "2026-11-25 (third session)" section: why is
# nvJPEG's engines' call slower inside basic@gpu than bare? Each runs its commands in
# interleaved rounds (bench/interleave.py: medians, same-round ratios, best/best).
# Run on the GPU machine through gpu-check's exec step (which sets $BUILD and $DATA):
#   STK_EXEC='R=6 bash bench/tools/gpu_experiments.sh NAME' scripts/gpu-check.sh exec
# NAME:
#   memory     nvJPEG memory padding / pre-allocation, bare and in the pipeline (runs the
#              GPU tests first: it was the first run of the decoder change)
#   threads    CPU-stage thread counts; bare beside 14 busy loops
#   threads2   CPU-stage workers or nvJPEG hybrid threads? hw_decoder_load 1.0 alongside
#   loads      bare beside header classification, driver calls, file reads; decode@gpu
#   reads      bare beside file reads at a pipeline's pace (30k files/s) and flat out
#   all_loads  every stand-in at once
#   dst        destinations that change from call to call, images packed
#   src        bitstreams packed in rotating pinned blocks, as in the host pool
#   states     several hardware decoder states used in turn (bare --bare-states K, the
#              pipeline STK_NVJPEG_HW_STATES=K), after the GPU tests with two states
#   format     bare's output format (rgbi as the pipeline, rgb, yuv, y) and bitstreams in
#              rotating registered blocks
#   warmup     the pipeline's rate without its first epoch (--warmup 8), as bare's rate is
#              taken after an untimed epoch; and over 200 epochs
#   nvjpeg_new nvJPEG from the PyPI wheel carried in .nvjpeg/ (13.3) against the machine's
#              (13.0.1): do two submitting threads still hang; is one caller faster?
#   order      batch composition: bare's batches as random sets of files drawn anew each
#              epoch (--bare-shuffle), the pipeline reading the files in order (fifth session)
#   submit     the order of a shuffled batch's images in nvJPEG's call: as drawn, by
#              bitstream size (desc, asc), balanced over 7 engines dealt in turn (rr) or in
#              contiguous chunks (chunk); the pipeline with the same orders (STK_NVJPEG_ORDER)
#              after the GPU tests with them (fifth session)
#   cycle      the same questions as order and submit, paired within one process: bare's
#              calls take the arms in turn (gpu_bench --bare-cycle), twice (fifth session)
#   quiet      does the CPU stage's work slow nvJPEG's call? In every 3 batches the pipeline
#              decodes one with the CPU stage idle and one beside it (STK_EXP_QUIET_DECODE=1;
#              paired medians printed at the end), basic, hw_decoder_load 1.0, 20% decoded
#              in the CPU stage, 15 and 4 CPU threads (fifth session)
#   wrapper    is the gap in stoker's decode_batch? bare's call and decode_batch as the
#              pipeline calls it, call by call on random sets (gpu_bench --bare-cycle-stoker),
#              twice (fifth session)
#   quiet2     the same with STK_EXP_QUIET_DECODE=2: the "alone" decodes also have the GPU
#              thread idle (no kernel launches, events or frees beside nvJPEG's call)
#   fresh      where the bitstreams lie and how recently another thread wrote them (as
#              the reader does): separate pinned copies, a batch packed into an arena a
#              call ahead, one block holding every file, the copies rewritten a call
#              ahead; gpu_bench --bare-cycle-fresh, twice (fifth session)
#   slabs      the host pool's blocks carved from page-locked slabs (the default now)
#              against blocks registered one by one (STK_PIN_HOST=blocks), after
#              test_gpu_pipeline (fifth session)
#   host       the CPU stage's share of the decoding (cpu_decoder_load): automatic (the
#              default), none, and fixed shares of 10, 20 and 30% (fifth session)
# The pipeline's experiment switches these used (STK_NVJPEG_HW_STATES, STK_NVJPEG_ORDER,
# STK_EXP_QUIET_DECODE, STK_PIN_HOST, STK_NVJPEG_THREADS) were removed once the experiments
# were decided (issue 20): the arms that set them now run the default code, so `states`,
# `submit`, `quiet`, `quiet2`, `slabs` and `threads2` measure nothing new. Kept as the
# record of what was run; gpu_bench's bare arms still work.
set -u
NAME=${1:?usage: gpu_experiments.sh NAME (see the header)}
ROUNDS=${R:-6}
BARE="$BUILD/gpu_bench $DATA --batch 256 --epochs 40 --threads 15 --only bare"
B="$BARE --bare-pinned"
S="$BUILD/stoker bench --data $DATA --device gpu --batch-size 256 --epochs 60"
P="$S --threads 15 --pipeline"
HW10=bench/pipelines/basic_gpu_hw10.txt
# busy loops under /bin/sh (interleave.py's shell): their pids kept, their output nowhere
SPIN='pids=; for c in $(seq 14); do (while :; do :; done) >/dev/null 2>&1 & pids="$pids $!"; done; sleep 0.3'
STOP='kill $pids'

# twice FLAGS...: two runs of bare with FLAGS (the paired --bare-cycle* experiments)
twice() {
  for k in 1 2; do
    echo "== gpu_bench $*, run $k"
    timeout 120 $B --epochs 80 "$@" 2>&1 | grep -E "CYCLE|RESULT|gpu_bench|DIE|error"
  done
}
# quiet_runs MODE "PIPELINE --threads N"...: STK_EXP_QUIET_DECODE=MODE runs, 100 epochs each
quiet_runs() {
  local mode=$1 run
  shift
  for run in "$@"; do
    echo "== quiet-decode $mode: $run"
    timeout 90 env STK_EXP_QUIET_DECODE=$mode $BUILD/stoker bench --data $DATA --device gpu --batch-size 256 \
      --epochs 100 --warmup 8 --pipeline $run 2>&1 | grep -E "quiet-decode|images/s"
  done
}

case $NAME in
  memory)
    echo "== gpu_tests"; timeout 200 "$BUILD/gpu_tests" --dataset "$DATA" --extra "$EXTRA" 2>&1 | tail -4
    echo "== test_gpu_pipeline"; timeout 120 "$BUILD/test_gpu_pipeline" 2>&1 | tail -3
    RUNS=(bare="$B" bare_pad_pre="$B --bare-padding 16 --bare-prealloc" basic="$P basic"
          basic_nopad="$P bench/pipelines/basic_gpu_nopad.txt" basic_prealloc="$P bench/pipelines/basic_gpu_prealloc.txt") ;;
  threads)
    RUNS=(bare="$B" bare_14busy="$SPIN; $B; $STOP" basic_t15="$S --pipeline basic --threads 15"
          basic_t8="$S --pipeline basic --threads 8" basic_t4="$S --pipeline basic --threads 4"
          basic_t2="$S --pipeline basic --threads 2") ;;
  threads2)
    RUNS=(bare="$B" basic_t15="$S --pipeline basic --threads 15"
          basic_t15_nvj4="env STK_NVJPEG_THREADS=4 $S --pipeline basic --threads 15"
          basic_t4="$S --pipeline basic --threads 4" hw10_t15="$S --pipeline $HW10 --threads 15"
          hw10_t4="$S --pipeline $HW10 --threads 4") ;;
  loads)
    RUNS=(bare="$B" bare_classify4="$B --bare-classify-load 4" bare_classify12="$B --bare-classify-load 12"
          bare_driver="$B --bare-driver-load" bare_read4="$B --bare-read-load 4" decode_t15="$P decode"
          basic_t15="$P basic") ;;
  reads)
    RUNS=(bare="$B" bare_read4_30k="$B --bare-read-load 4 --bare-read-rate 30000"
          bare_read15_30k="$B --bare-read-load 15 --bare-read-rate 30000" bare_read4_max="$B --bare-read-load 4"
          basic_t15="$P basic") ;;
  all_loads)
    RUNS=(bare="$B" bare_all="$B --bare-classify-load 4 --bare-driver-load --bare-read-load 4 --bare-read-rate 30000"
          basic_t15="$P basic") ;;
  dst)
    RUNS=(bare="$B" bare_rotate1="$B --bare-dst-rotate 1" bare_rotate4="$B --bare-dst-rotate 4" basic_t15="$P basic") ;;
  src)
    RUNS=(bare_pinned="$B" bare_registered="$BARE --bare-registered"
          reg_blocks1="$BARE --bare-registered --bare-src-blocks 1"
          reg_blocks4="$BARE --bare-registered --bare-src-blocks 4" pinned_blocks4="$B --bare-src-blocks 4"
          basic="$P basic" basic_pin_alloc="env STK_PIN_HOST=alloc $P basic") ;;
  states)
    echo "== gpu_tests, 2 hardware states"
    STK_NVJPEG_HW_STATES=2 timeout 240 "$BUILD/gpu_tests" --dataset "$DATA" --extra "$EXTRA" 2>&1 | grep -E "lifetime|FAIL|gpu_tests:" | tail -12
    echo "== test_gpu_pipeline, 2 hardware states"
    STK_NVJPEG_HW_STATES=2 timeout 120 "$BUILD/test_gpu_pipeline" 2>&1 | tail -3
    RUNS=(bare="$B" bare_s2="$B --bare-states 2" bare_s3="$B --bare-states 3" basic="$P basic"
          basic_s2="env STK_NVJPEG_HW_STATES=2 $P basic" hw10_s2="env STK_NVJPEG_HW_STATES=2 $P $HW10") ;;
  format)
    RUNS=(bare="$B" bare_rgb="$B --bare-format rgb" bare_yuv="$B --bare-format yuv" bare_y="$B --bare-format y"
          reg_blocks4="$BARE --bare-registered --bare-src-blocks 4" basic="$P basic") ;;
  warmup)
    S200="$BUILD/stoker bench --data $DATA --device gpu --batch-size 256 --epochs 200 --threads 15 --pipeline"
    RUNS=(bare="$B" basic="$P basic" basic_w8="$P basic --warmup 8" basic_200_w8="$S200 basic --warmup 8"
          hw10_w8="$P $HW10 --warmup 8") ;;
  nvjpeg_new)
    NEW="env LD_LIBRARY_PATH=$PWD/.nvjpeg"
    hung=0
    for handles in "" --bare-own-handles "" ""; do
        echo "== nvJPEG 13.3, two submitting threads $handles"
        timeout -s KILL 30 $NEW $B --epochs 10 --bare-threads 2 $handles >/tmp/two.log 2>&1
        rc=$?
        grep -E "nvJPEG|RESULT|bare:" /tmp/two.log
        [ $rc = 0 ] || { echo "(exit $rc: hung or failed)"; hung=1; }
    done
    RUNS=(bare="$B" bare_new="$NEW $B" basic="$P basic" basic_new="$NEW $P basic")
    [ $hung = 0 ] && RUNS+=(bare2_new="$NEW $B --bare-threads 2") ;;
  order)
    SHOW='decode_hw_call +[0-9.]+|[0-9.]+ ms per call'
    W="--warmup 8 --pipeline"
    RUNS=(bare="$B" bare_shuffle="$B --bare-shuffle" basic="$S --threads 15 $W basic"
          basic_ordered="$S --threads 15 $W bench/pipelines/basic_gpu_ordered.txt") ;;
  submit)
    BS="$B --bare-shuffle"
    SHOW='decode_hw_call +[0-9.]+|[0-9.]+ ms per call'
    P8="$S --threads 15 --warmup 8 --pipeline basic"
    for o in desc dealt chunks; do
      echo "== gpu_tests, STK_NVJPEG_ORDER=$o"
      STK_NVJPEG_ORDER=$o timeout 100 "$BUILD/gpu_tests" --dataset "$DATA" --extra "$EXTRA" 2>&1 | grep -E "^decode rgb  load|lifetime|FAIL|gpu_tests:" | head -8
    done
    echo "== test_gpu_pipeline, STK_NVJPEG_ORDER=dealt"; STK_NVJPEG_ORDER=dealt timeout 100 "$BUILD/test_gpu_pipeline" 2>&1 | tail -2
    RUNS=(bare="$B" shuffle="$BS" desc="$BS --bare-order desc" asc="$BS --bare-order asc" rr="$BS --bare-order rr"
          chunk="$BS --bare-order chunk" basic="$P8" basic_desc="env STK_NVJPEG_ORDER=desc $P8"
          basic_dealt="env STK_NVJPEG_ORDER=dealt $P8" basic_chunks="env STK_NVJPEG_ORDER=chunks $P8") ;;
  cycle)
    twice --bare-cycle
    exit 0 ;;
  quiet)
    quiet_runs 1 "basic --threads 15" "basic --threads 15" "$HW10 --threads 15" \
      "bench/pipelines/basic_gpu_cpu20.txt --threads 15" "basic --threads 4"
    exit 0 ;;
  wrapper)
    twice --bare-cycle-stoker
    exit 0 ;;
  quiet2)
    quiet_runs 2 "basic --threads 15" "basic --threads 15" "$HW10 --threads 15" "basic --threads 4"
    exit 0 ;;
  fresh)
    twice --bare-src-blocks 1 --bare-cycle-fresh
    exit 0 ;;
  slabs)
    echo "== test_gpu_pipeline"; timeout 120 "$BUILD/test_gpu_pipeline" 2>&1 | grep -E "host blocks|PASSED|FAILED" | tail -3
    SHOW='decode_hw_call +[0-9.]+|[0-9.]+ ms per call'
    P8="$S --threads 15 --warmup 8 --pipeline"
    RUNS=(bare="$B" bare_shuffled="$B --bare-shuffle" basic_slabs="$P8 basic" basic_blocks="env STK_PIN_HOST=blocks $P8 basic"
          hw10_slabs="$P8 $HW10" hw10_blocks="env STK_PIN_HOST=blocks $P8 $HW10") ;;
  host)
    SHOW='decode_hw_call +[0-9.]+|uploaded: [0-9]+|share now [0-9]+|[0-9.]+ ms per call'
    W="--warmup 8 --pipeline"
    RUNS=(bare="$B" basic="$S --threads 15 $W basic" cpu0="$S --threads 15 $W bench/pipelines/basic_gpu_cpu0.txt"
          cpu10="$S --threads 15 $W bench/pipelines/basic_gpu_cpu10.txt"
          cpu20="$S --threads 15 $W bench/pipelines/basic_gpu_cpu20.txt"
          cpu30="$S --threads 15 $W bench/pipelines/basic_gpu_cpu30.txt") ;;
  *) echo "gpu_experiments.sh: no experiment '$NAME' (see the header)" >&2; exit 2 ;;
esac
python3 bench/interleave.py --rounds "$ROUNDS" --timeout "${TO:-180}" ${SHOW:+--show "$SHOW"} "${RUNS[@]}"
