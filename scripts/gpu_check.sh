#!/usr/bin/env bash
# One-shot check on a machine with a CUDA GPU: the GPU tests, then the GEMV
# benchmark. Everything goes to $OUT/gpu_check.txt (./gpu_check_out.txt when
# OUT is unset) and to stdout. Wheels the machine lacks (e.g. lark) may be
# carried in .whl/; they are installed into /tmp/site first.
#
#   bash scripts/gpu_check.sh            # about 8 minutes at most
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
if [ -n "${OUT:-}" ]; then
    REPORT="$OUT/gpu_check.txt"
else
    REPORT="$ROOT/gpu_check_out.txt"
fi
: > "$REPORT"

say() { echo "$@" | tee -a "$REPORT"; }
run() {   # run <seconds> <command...>: output to the report, exit status noted
    local limit=$1; shift
    say "\$ $*"
    timeout "$limit" "$@" 2>&1 | tee -a "$REPORT"
    local rc=${PIPESTATUS[0]}
    say "[exit $rc]"
    return 0
}

say "== gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ) at $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
run 30 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv

if ls "$ROOT"/.whl/*.whl >/dev/null 2>&1; then
    run 120 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target /tmp/site "$ROOT"/.whl/*.whl
    export PYTHONPATH="/tmp/site:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
else
    export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
fi

run 60 python3 - <<'EOF'
import importlib
for name in ("numpy", "cupy", "lark", "hypothesis", "cuda.bindings"):
    try:
        mod = importlib.import_module(name)
        print(f"{name}: {getattr(mod, '__version__', 'ok')}")
    except Exception as exc:
        print(f"{name}: MISSING ({exc})")
from ninfer_ir.backends.cuda import runtime, nvrtc
print("gpu_available:", runtime.gpu_available())
print("compilers here:", nvrtc.available_compilers())
EOF

run 300 python3 -m pytest -m gpu tests/backends -k cuda -q -p no:cacheprovider -rs
run 150 python3 benchmarks/gemv_q4k_cuda.py --iters 100
run 60 python3 benchmarks/gemv_q4k_cuda.py --iters 100 --hot --shapes 4096x4096,11008x4096
say "== done; report in $REPORT"
