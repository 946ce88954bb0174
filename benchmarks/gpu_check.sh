#!/usr/bin/env bash
# Run the DP-SGD benchmark (benchmarks/bench_dpsgd.py) and the LiRA shadow-training benchmark
# (benchmarks/bench_lira.py) on a CUDA GPU and print their JSON lines (DP-SGD's first, then LiRA's).
#
# Usage: benchmarks/gpu_check.sh [extra bench_dpsgd.py options, e.g. --quick]   (GPU_CHECK_LIRA=0 skips LiRA's)
# Environment: PYTHON (default: the project's .venv/bin/python if present, else python3),
#              BENCH_TIMEOUT (seconds, default 1800).
# Installs nothing: it uses the environment the project is installed in (torch with CUDA; Opacus optional).
# Exits 2 when no CUDA device is visible to torch, 124 on timeout, the benchmark's status otherwise.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x "$root/.venv/bin/python" ]]; then PYTHON="$root/.venv/bin/python"; else PYTHON=python3; fi
fi
timeout_s="${BENCH_TIMEOUT:-1800}"

if ! "$PYTHON" - <<'EOF'
import sys
try:
    import torch
except ImportError:
    sys.exit("gpu_check: torch is not installed for this Python (pip install -e '.[torch]').")
if not torch.cuda.is_available():
    sys.exit(f"gpu_check: no CUDA device is available to torch {torch.__version__} "
             f"(built with CUDA {torch.version.cuda}); run benchmarks/bench_dpsgd.py on the CPU instead.")
print(f"gpu_check: {torch.cuda.device_count()} CUDA device(s), using {torch.cuda.get_device_name(0)}; "
      f"torch {torch.__version__}, CUDA {torch.version.cuda}")
EOF
then
    exit 2
fi

log="$(mktemp "${TMPDIR:-/tmp}/bench_dpsgd_cuda.XXXXXX")"
trap 'rm -f "$log"' EXIT
status=0
timeout --signal=TERM --kill-after=30 "$timeout_s" \
    "$PYTHON" benchmarks/bench_dpsgd.py --device cuda "$@" 2>&1 | tee "$log" || status=${PIPESTATUS[0]}
if [[ $status -eq 124 ]]; then
    echo "gpu_check: the benchmark ran past ${timeout_s} s (BENCH_TIMEOUT) and was stopped." >&2
    exit 124
fi
if [[ $status -ne 0 ]]; then
    echo "gpu_check: the benchmark failed (exit status $status)." >&2
    exit "$status"
fi
json="$(grep -E '^\{' "$log" | tail -n 1 || true)"
if [[ -z "$json" ]]; then
    echo "gpu_check: the benchmark printed no JSON line." >&2
    exit 1
fi
echo "$json"

# The batched shadow-model training of the LiRA evaluation (benchmarks/bench_lira.py) on the same GPU: 256 shadow
# MLPs on Adult, DP-SGD over plain, shadows per second.  Skipped with GPU_CHECK_LIRA=0.
if [[ "${GPU_CHECK_LIRA:-1}" != "0" ]]; then
    lira_log="$(mktemp "${TMPDIR:-/tmp}/bench_lira_cuda.XXXXXX")"
    trap 'rm -f "$log" "$lira_log"' EXIT
    status=0
    timeout --signal=TERM --kill-after=30 "$timeout_s" \
        "$PYTHON" benchmarks/bench_lira.py --device cuda --sklearn-models 4 2>&1 | tee "$lira_log" \
        || status=${PIPESTATUS[0]}
    if [[ $status -ne 0 ]]; then
        echo "gpu_check: the LiRA benchmark failed (exit status $status)." >&2
        exit "$status"
    fi
    grep -E '^\{' "$lira_log" | tail -n 1
fi
