#!/usr/bin/env bash
# Every check of nbcallback that needs a GPU, in one go (about 8 minutes on one H100/H200):
#   1. the CUDA tests: no host sync and no extra kernel on ordinary steps, device prefetch,
#      LossMonitor's NaN check on the device;
#   2. the CUDA benchmark (python -m benchmarks --device cuda): results into OUT/cuda.json and cuda.md;
#   3. examples/ddp_mnist.py under torchrun with nccl, one epoch;
#   4. graph mode: its tests on CUDA (inductor with CUDA graphs against eager), then graph mode and a
#      compiled bare loop vs the eager bare loop (target: graph mode >= 5x): OUT/cuda_graph.json and .md.
# Usage, from the repository root on a machine with CUDA:
#   bash benchmarks/gpu_check.sh PATH/TO/MNIST_Data.zip [OUT]      (OUT defaults to benchmarks/results)
# Each step's log goes to OUT too; the script goes on after a failed step and exits non-zero at the end.
set -uo pipefail
zip=${1:?"usage: bash benchmarks/gpu_check.sh PATH/TO/MNIST_Data.zip [OUT]"}
out=${2:-benchmarks/results}
mkdir -p "$out"
zip=$(cd "$(dirname "$zip")" && pwd)/$(basename "$zip")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PYTHONUNBUFFERED=1 NBCALLBACK_MNIST_URL="$zip" XDG_CACHE_HOME="$work/cache"
status=0

python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: this script checks the GPU path')" || exit 2
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
python3 -m zipfile -e "$zip" "$work" || { echo "could not unzip $zip"; exit 2; }

echo "== 1. CUDA tests"
timeout 150 python3 -m pytest -q -p no:cacheprovider -o addopts="" \
    tests/perf/test_cuda_sync.py tests/perf/test_step_ops.py tests/train/test_prefetch.py tests/train/test_monitors.py \
    tests/train/test_profiler.py tests/dataset/test_ds_callbacks.py \
    2>&1 | tee "$out/cuda_tests.log" || status=1

echo "== 2. CUDA benchmark"
timeout 300 python3 -m benchmarks --device cuda --data "$work/MNIST_Data" --json "$out/cuda.json" \
    2>&1 | grep -v '^USDT' | tee "$out/cuda_bench.log" || status=1

echo "== 3. DDP example, nccl"
timeout 100 torchrun --standalone --nproc_per_node=1 examples/ddp_mnist.py --epochs 1 --backend nccl \
    --data-dir "$work" --checkpoint-dir "$work/ckpt" 2>&1 | tee "$out/ddp_nccl.log" || status=1

echo "== 4. graph mode: tests on CUDA, then the speed vs the eager bare loop (each variant compiles once)"
timeout 240 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/train/test_graph_mode.py \
    2>&1 | tee "$out/cuda_graph_tests.log" || status=1
timeout 420 python3 -m benchmarks --device cuda --data "$work/MNIST_Data" --only bare,nbcallback_graph,bare_graph \
    --no-counts --no-peers --rounds 5 --json "$out/cuda_graph.json" \
    2>&1 | grep -v '^USDT' | tee "$out/cuda_graph_bench.log" || status=1

exit $status
