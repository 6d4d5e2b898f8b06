#!/usr/bin/env bash
# First contact with a GPU box (issue 13): build (or use given binaries), run the GPU tests, the
# microbenchmarks (copy-cap included), the PyTorch kernel timings (scripts/measure_kernels.py, when
# python3 has torch), calibrate the simulator, run the hw scenarios with every policy (and chunkflow
# again planned on the node calibrated from this box's benches), validate the predictions against
# the measurements and draw the plots. The measurements land, with their context, under
# traces/measured/<device>/ (or --out DIR), the simulator's analysis of them under
# traces/analysis/<device>/ (or DIR/analysis; ANALYSIS_DIR overrides). Adapts to one or several GPUs and writes what it
# skipped, and why, to SKIPPED.txt.
#
#   bash scripts/first-contact.sh [--bin DIR] [--out DIR] [--quick] [--stage measure|analyze|all]
#
#   --bin DIR    use DIR/chunkflow, DIR/chunkflow-hw, DIR/chunkflow_gpu_tests instead of building
#   --out DIR    output folder (default traces/measured/<device slug from nvidia-smi>)
#   --quick      fewer repetitions (warm-up 1, repeat 3) and a smaller bench sweep
#   --stage S    measure: GPU work only; analyze: calibrate/validate/plots from an existing
#                folder (no GPU needed); all (default): both
# Environment: PYTHON (default: the first of /usr/bin/python3, python3 that imports matplotlib);
# T_TESTS, T_BENCH, T_COPY_CAP, T_RUN (time limits, s) and FLUX_VARIANTS (below).
# Exit status: 0 when every stage that ran succeeded (tests that fail are recorded, not fatal:
# see gpu_tests.txt), 1 on a failed measurement command, 3 without a GPU for the measure stage.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BIN="" OUT_DIR="" QUICK=0 STAGE=all
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --out) OUT_DIR=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --stage) STAGE=$2; shift 2 ;;
    *) echo "first-contact.sh: unknown argument $1 (see the header of this script)" >&2; exit 2 ;;
  esac
done
case "$STAGE" in measure|analyze|all) ;; *) echo "first-contact.sh: --stage: expected measure, analyze or all" >&2; exit 2 ;; esac

log() { echo "[first-contact $(date -u +%H:%M:%S)] $*"; }

# ---- binaries ----------------------------------------------------------------------------------
if [ -z "$BIN" ]; then
  log "building (cmake, Release)"
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null && \
    cmake --build build -j"$(nproc)" --target chunkflow chunkflow-hw chunkflow_gpu_tests > build-first-contact.log 2>&1 \
    || { echo "first-contact.sh: build failed (build-first-contact.log)" >&2; exit 1; }
  SIM=build/chunkflow HW=build/hw/chunkflow-hw TESTS=build/hw/chunkflow_gpu_tests
else
  SIM=$BIN/chunkflow HW=$BIN/chunkflow-hw TESTS=$BIN/chunkflow_gpu_tests
fi

# ---- device and output folder ------------------------------------------------------------------
NGPU=0
GPU_NAME=unknown
if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
  NGPU=$(nvidia-smi -L | grep -c '^GPU')
  GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
fi
SLUG=$(echo "$GPU_NAME" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\+/-/g; s/^-//; s/-$//')
# The one-GPU node the benches, runs and calibration describe: the built-in node of this GPU
# (NODE=<id or file> overrides). An unknown GPU falls back to 1xh100-sxm and says so in SKIPPED.txt.
NODE_GUESSED=0
if [ -z "${NODE:-}" ]; then
  case "$GPU_NAME" in
    *H200*) NODE=1xh200 ;;
    *H100*) NODE=1xh100-sxm ;;
    *) NODE=1xh100-sxm; NODE_GUESSED=1 ;;
  esac
fi
[ -n "$OUT_DIR" ] || OUT_DIR=traces/measured/$SLUG
# The simulator's analysis (calibration, validation, comparisons, plots) goes beside, not into, a
# folder under traces/measured/, which holds only what GPU runs wrote: traces/analysis/<name>/
# (test_measured_validation reads the calibration there); elsewhere OUT_DIR/analysis/.
# ANALYSIS_DIR overrides.
if [ -z "${ANALYSIS_DIR:-}" ]; then
  case "$(cd "$(dirname "$OUT_DIR")" 2> /dev/null && pwd)" in
    "$ROOT/traces/measured") ANALYSIS_DIR=$ROOT/traces/analysis/$(basename "$OUT_DIR") ;;
    *) ANALYSIS_DIR=$OUT_DIR/analysis ;;
  esac
fi
AN=$ANALYSIS_DIR
mkdir -p "$OUT_DIR"/bench "$OUT_DIR"/runs "$AN"
SKIPPED=$OUT_DIR/SKIPPED.txt

# Time limits per command (seconds): a command past its limit is recorded in SKIPPED.txt, the rest go on.
# T_COPY_CAP: the copy-cap bench's own limit (it ran past 80 s and 95 s on an H100); 0 skips it
# (no fit of `chunkflow calibrate` uses it). FLUX_VARIANTS: the extra FLUX 1024² chunkflow runs below.
T_TESTS=${T_TESTS:-180} T_BENCH=${T_BENCH:-240} T_RUN=${T_RUN:-120} T_COPY_CAP=${T_COPY_CAP:-${T_BENCH:-240}}
FLUX_VARIANTS=${FLUX_VARIANTS:-waits-every waits-latest launch-stream maxconn32}
if [ "$QUICK" = 1 ]; then WARMUP=1 REPEAT=3 BENCH_REPEAT=5 MAXMIB=256; else WARMUP=2 REPEAT=5 BENCH_REPEAT=10 MAXMIB=1024; fi
SCENARIOS=$(ls scenarios/hw-*.json)
POLICIES="no-offload layerwise chunkflow"
# The proxy mode of the one-GPU runs: kernel (SM-driven, like NCCL's SHM transport), the backend
# `chunkflow calibrate` fits first (collective_proxy_kernel) and the one the simulator's pcie-proxy
# all-to-all models, so prediction and measurement describe the same all-to-all. (The copy-engine
# proxy's host-to-device half queues behind prefetch copies on the copy engine: model/calibration.cpp.)
COLLECTIVE=${COLLECTIVE:-kernel}

measure() {
  if [ "$NGPU" -lt 1 ]; then echo "first-contact.sh: no GPU (nvidia-smi lists none): nothing to measure" >&2; exit 3; fi
  : > "$SKIPPED"
  [ "$NODE_GUESSED" = 1 ] && echo "node: no built-in one-GPU node for '$GPU_NAME'; benches and runs use 1xh100-sxm (set NODE)" >> "$SKIPPED"
  {
    echo "command: $0 $*"
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "git_revision: $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
    echo "binaries: $SIM $HW $TESTS"
    echo "gpus: $NGPU"
    echo "node: $NODE"
    nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current --format=csv
    nvidia-smi topo -m
    cat /proc/driver/nvidia/version 2>/dev/null
    nvcc --version 2>/dev/null | tail -2
    ldd "$HW" | grep -E 'cublas|nccl|cudart'
    lscpu | grep -E 'Model name|Socket|NUMA'
  } > "$OUT_DIR/context.txt" 2>&1
  log "microbenchmarks"
  timeout $T_BENCH "$HW" bench h2d-bandwidth d2h-bandwidth d2d-bandwidth h2d-with-d2h collective-proxy-kernel \
        collective-proxy-copy-engine collective-nccl h2d-with-collective-kernel h2d-with-collective-copy-engine \
        compute-with-h2d compute-with-collective gemm attention \
        --scenario scenarios/hw-wan1.3b-480p-17f-u2-1xh100-sxm.json --node "$NODE" --warmup 3 --repeat $BENCH_REPEAT --max-mib $MAXMIB \
        --output "$OUT_DIR/bench/bench-wan2.1-t2v-1.3b.json" || echo "bench failed or timed out: exit $?" | tee -a "$SKIPPED"
  timeout $T_BENCH "$HW" bench gemm attention compute-with-h2d compute-with-collective \
        --scenario scenarios/hw-flux-1024-u2-1xh100-sxm.json --node "$NODE" --warmup 3 \
        --repeat $BENCH_REPEAT --max-mib $MAXMIB --output "$OUT_DIR/bench/bench-flux.1-dev.json" || echo "bench failed or timed out: exit $?" | tee -a "$SKIPPED"
  if [ "$T_COPY_CAP" -gt 0 ]; then
    timeout $T_COPY_CAP "$HW" bench copy-cap --scenario scenarios/hw-wan1.3b-480p-17f-u2-1xh100-sxm.json --node "$NODE" --warmup 3 --repeat $BENCH_REPEAT --max-mib 256 \
          --caps-gb-per-s 0 2 5 10 15 20 30 40 50 --output "$OUT_DIR/bench/copy-cap.json" || echo "copy-cap bench failed or timed out: exit $?" | tee -a "$SKIPPED"
  else
    echo "copy-cap bench: skipped (T_COPY_CAP=0)" >> "$SKIPPED"
  fi
  if [ "$NGPU" -lt 2 ]; then
    echo "collective_nccl, H2D on two GPUs at once, H2D beside an NCCL all-to-all: need 2 GPUs, this box has $NGPU (the one-GPU pcie-proxy all-to-all stands in)" >> "$SKIPPED"
  fi

  # The kernels the compute model prices, as PyTorch runs them (cuBLAS, SDPA backends, elementwise).
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' > /dev/null 2>&1; then
    log "kernels through PyTorch"
    timeout $T_BENCH python3 scripts/measure_kernels.py --out "$OUT_DIR/kernels.json" $([ "$QUICK" = 1 ] && echo --quick) \
      > "$OUT_DIR/kernels.txt" 2>&1 || echo "measure_kernels.py failed or timed out: exit $? (kernels.txt)" | tee -a "$SKIPPED"
  else
    echo "kernels.json: python3 has no torch with CUDA here (scripts/measure_kernels.py skipped)" >> "$SKIPPED"
  fi

  log "hw scenarios × policies"
  for sc in $SCENARIOS; do
    name=$(basename "$sc" .json)
    for pol in $POLICIES; do
      timeout $T_RUN "$HW" run --scenario "$sc" --node "$NODE" --policy "$pol" --collective $COLLECTIVE --warmup $WARMUP --repeat $REPEAT \
            --trace "$OUT_DIR/runs/$name.$pol.trace.json" --output "$OUT_DIR/runs/$name.$pol.json" \
            > "$OUT_DIR/runs/$name.$pol.txt" 2>&1
      rc=$?
      echo "$name $pol: exit $rc"
      if [ $rc -ne 0 ]; then
        echo "run $name $pol: exit $rc ($(tail -1 "$OUT_DIR/runs/$name.$pol.txt"))" >> "$SKIPPED"
      fi
    done
  done
  # chunkflow's plans on this box's calibrated node (the planner then prices the copies' cost to
  # compute and the measured rates), calibrated here from the benches above; the file stays beside
  # runs/, where validate finds it by name and digest on another machine (sim/validate.cpp).
  if "$SIM" calibrate --measurements $(ls "$OUT_DIR"/bench/bench-wan*.json "$OUT_DIR"/bench/copy-cap.json 2>/dev/null) \
        --node "$NODE" --out "$OUT_DIR/calibration-device.json" > "$OUT_DIR/calibrate-device.txt" 2>&1; then
    for sc in $SCENARIOS; do
      name=$(basename "$sc" .json)
      timeout $T_RUN "$HW" run --scenario "$sc" --node "$NODE" --policy chunkflow --calibration "$OUT_DIR/calibration-device.json" \
            --collective $COLLECTIVE --warmup $WARMUP --repeat $REPEAT --trace "$OUT_DIR/runs/$name.chunkflow-calibrated.trace.json" \
            --output "$OUT_DIR/runs/$name.chunkflow-calibrated.json" > "$OUT_DIR/runs/$name.chunkflow-calibrated.txt" 2>&1
      rc=$?
      echo "$name chunkflow (calibrated plan): exit $rc"
      if [ $rc -ne 0 ]; then
        echo "run $name chunkflow-calibrated: exit $rc ($(tail -1 "$OUT_DIR/runs/$name.chunkflow-calibrated.txt"))" >> "$SKIPPED"
      fi
    done
  else
    echo "calibrate on this box failed (calibrate-device.txt): chunkflow's calibrated plans were not run" | tee -a "$SKIPPED"
  fi
  # The harness's false waits (compute held behind copies it does not read; hw/README.md "Compute
  # waiting on copies it does not read"): FLUX 1024² chunkflow again with the lowering before
  # 2026-11-26 (waits-every: one event wait per cross-stream dep; the runs above use one per
  # stream), the default lowering once more after it (waits-latest: the two bracket it in time, so
  # a drift of the machine shows), stream-launched (launch-stream: no CUDA graph; on an H200 in
  # session 17 it had no such waits), and graph-launched with 32 hardware queues (maxconn32);
  # `chunkflow compare` (analysis/) says whether compute still waits. (--launch direct timed out at
  # T_RUN in sessions 13 and 15: its spin latch times out at 5 s per run on real plans, so it is no
  # longer run here.)
  flux=scenarios/hw-flux-1024-u2-1xh100-sxm.json
  if [ -f "$flux" ]; then
    name=$(basename "$flux" .json)
    for variant in $FLUX_VARIANTS; do
      case "$variant" in
        waits-every) waits=every launch=graph; prefix=() ;;
        waits-latest) waits=latest launch=graph; prefix=() ;;
        launch-stream) waits=latest launch=stream; prefix=() ;;
        maxconn32) waits=latest launch=graph; prefix=(env CUDA_DEVICE_MAX_CONNECTIONS=32) ;;
        *) echo "first-contact.sh: FLUX_VARIANTS: unknown variant '$variant' (waits-every, waits-latest, launch-stream, maxconn32)" >&2; continue ;;
      esac
      "${prefix[@]}" timeout $T_RUN "$HW" run --scenario "$flux" \
            --node "$NODE" --policy chunkflow --collective $COLLECTIVE --waits $waits --launch $launch --warmup $WARMUP --repeat $REPEAT \
            --trace "$OUT_DIR/runs/$name.chunkflow-$variant.trace.json" --output "$OUT_DIR/runs/$name.chunkflow-$variant.json" \
            > "$OUT_DIR/runs/$name.chunkflow-$variant.txt" 2>&1
      rc=$?
      echo "$name chunkflow ($variant): exit $rc"
      [ $rc -ne 0 ] && echo "run $name chunkflow-$variant: exit $rc ($(tail -1 "$OUT_DIR/runs/$name.chunkflow-$variant.txt"))" >> "$SKIPPED"
    done
  fi
  timeout $T_RUN "$HW" check --node "$NODE" --model wan2.1-t2v-1.3b --height 480 --width 832 --frames 17 --ulysses 2 \
        --policy chunkflow --chunk-mib 16 --resident-fraction 0.3 --repeat 2 --output "$OUT_DIR/runs/check-wan1.3b-17f.result.json" \
        > "$OUT_DIR/runs/check-wan1.3b-17f.txt" 2>&1
  echo "check: exit $?"
  log "GPU tests"
  timeout $T_TESTS "$TESTS" -d yes > "$OUT_DIR/gpu_tests.txt" 2>&1
  echo "exit status: $?" >> "$OUT_DIR/gpu_tests.txt"
  tail -3 "$OUT_DIR/gpu_tests.txt"

  if [ "$NGPU" -ge 2 ]; then
    timeout $T_RUN "$HW" run --node 2xh100-pcie --model wan2.1-t2v-1.3b --height 480 --width 832 --frames 17 --ulysses 2 \
          --warmup $WARMUP --repeat $REPEAT --trace "$OUT_DIR/runs/nccl-wan1.3b-17f.trace.json" \
          --output "$OUT_DIR/runs/nccl-wan1.3b-17f.json" > "$OUT_DIR/runs/nccl-wan1.3b-17f.txt" 2>&1
    echo "nccl run: exit $?"
  else
    echo "2xh100-pcie runs over NCCL (two ranks, barrier-aligned clocks, collective waits): need 2 GPUs, this box has $NGPU" >> "$SKIPPED"
  fi
}

pick_python() {
  for p in ${PYTHON:-} /usr/bin/python3 python3; do
    if [ -n "$p" ] && "$p" -c 'import matplotlib' > /dev/null 2>&1; then echo "$p"; return; fi
  done
}

analyze() {
  local py
  py=$(pick_python)
  # Without a GPU here (--stage analyze on another machine), the node is the one the measure stage
  # recorded in context.txt.
  if [ "$NODE_GUESSED" = 1 ] && grep -q '^node: ' "$OUT_DIR/context.txt" 2> /dev/null; then
    NODE=$(sed -n 's/^node: //p' "$OUT_DIR/context.txt" | head -1)
  fi
  log "calibrate"
  # calibrate takes one file per measurement key: the Wan bench (every key); the FLUX bench's
  # GEMM/attention shapes are kept as data beside it.
  "$SIM" calibrate --measurements $(ls "$OUT_DIR"/bench/bench-wan*.json "$OUT_DIR"/bench/copy-cap.json 2>/dev/null) --node "$NODE" \
         --out "$AN/calibration.json" > "$AN/calibrate.txt" 2>&1
  echo "calibrate: exit $?"
  log "validate (every run is held out: the calibration fits microbenchmarks only)"
  "$SIM" validate --measured "$OUT_DIR" --calibration "$AN/calibration.json" --json \
         --out "$AN/validation.json" > /dev/null 2> "$AN/validate.txt"
  echo "validate: exit $?"
  "$SIM" validate --measured "$OUT_DIR" --calibration "$AN/calibration.json" >> "$AN/validate.txt" 2>&1
  "$SIM" validate --measured "$OUT_DIR" --json --out "$AN/validation-uncalibrated.json" > /dev/null 2>&1
  rm -f "$AN"/*.compare.json "$AN"/*.predicted.json  # validate reads every *.json below
  log "predicted timelines and op-by-op comparison"
  # validate --traces writes each run's prediction on the plan that run executed (a plan re-built on
  # the calibrated node could differ), so compare lines the two up op for op.
  "$SIM" validate --measured "$OUT_DIR/runs" --calibration "$AN/calibration.json" --traces "$AN" \
         > /dev/null 2>> "$AN/validate.txt"
  for sc in $SCENARIOS; do
    name=$(basename "$sc" .json)
    for pol in $POLICIES chunkflow-calibrated chunkflow-direct chunkflow-waits-every chunkflow-waits-latest chunkflow-launch-stream chunkflow-maxconn32; do
      [ -f "$OUT_DIR/runs/$name.$pol.trace.json" ] || continue
      "$SIM" compare --predicted "$AN/$name.$pol.predicted.trace.json" \
             --measured "$OUT_DIR/runs/$name.$pol.trace.json" --json > "$AN/$name.$pol.compare.json" 2>&1
    done
  done
  if [ -f "$OUT_DIR/kernels.json" ]; then
    # Every PyTorch kernel timing priced by the compute model on the node of its GPU (text only:
    # validate --measured reads every *.json below $OUT_DIR).
    log "kernel model against the PyTorch kernel timings"
    "$SIM" validate --kernels "$OUT_DIR/kernels.json" --plot "$AN/kernels-check.png" \
           > "$AN/kernels-check.txt" 2>&1
    echo "validate --kernels: exit $?"
  fi
  if [ -n "$py" ]; then
    log "plots with $py"
    "$py" scripts/plot_calibration.py "$AN/calibration.json" "$AN/calibration.png" || true
    "$py" scripts/plot_validation.py "$AN/validation.json" "$AN/validation.png" || true
    for f in "$AN"/hw-wan1.3b-480p-17f-*.chunkflow.predicted.trace.json "$AN"/hw-flux-1024-*.chunkflow.predicted.trace.json; do
      [ -f "$f" ] || continue
      b=$(basename "$f" .predicted.trace.json)
      "$py" scripts/plot_timeline.py "$f" "$OUT_DIR/runs/$b.trace.json" "$AN/$b.timeline.png" || true
    done
  else
    echo "plots: no python3 with matplotlib found (set PYTHON); run this script with --stage analyze where one exists" >> "$SKIPPED"
  fi
}

case "$STAGE" in
  measure) measure "$@" || exit 1 ;;
  analyze) analyze ;;
  all) measure "$@" || exit 1; analyze ;;
esac
log "done: $OUT_DIR"
[ -s "$SKIPPED" ] && { echo "skipped:"; cat "$SKIPPED"; }
exit 0
