#!/usr/bin/env bash
# bench/gpu on a lent GPU, from the repository root with .gpu-bench/ (prepare.sh)
# carried: the CUDA cases of the GPU test suites, a 4096 matrix product and ResNet-18
# through Kiln's CUDA path, and the same on PyTorch's CUDA path and cuBLAS (peers.py),
# side by side. Results and logs in $OUT; gpu_bench.json holds the figures. Each step
# has a timeout and a failed step does not stop the others: the whole run ends inside
# 6 minutes.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/kiln-gpu-bench}
mkdir -p "$OUT"
B=.gpu-bench
TARGET=${TARGET:-cuda -arch=sm_90}
PYTHON=${PYTHON:-python3}  # the one with PyTorch
nvidia-smi -L || true
# NVRTC: the machine's CUDA toolkit, else PyTorch's wheel of it.
NVRTC=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
         $("$PYTHON" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
  f=$(find "$d" -name 'libnvrtc.so.13*' 2>/dev/null | head -1)
  if [ -n "$f" ]; then NVRTC=$(dirname "$f"); break; fi
done
echo "libnvrtc: ${NVRTC:-not found}"
export LD_LIBRARY_PATH="$PWD/$B/lib${NVRTC:+:$NVRTC}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PATH:/usr/local/cuda/bin"
MODELS=$(mktemp -d)

step() {  # step NAME SECONDS COMMAND...: runs it, logs to $OUT/NAME.log, says how it ended
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout "$secs" "$@" > "$OUT/$name.out" 2> "$OUT/$name.log"
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - t0)) s"
  return 0
}

step peers 150 "$PYTHON" bench/gpu/peers.py "$MODELS"
step suite_runtime 90 "$B/gpu_runtime_test" --gtest_filter='*cuda*:*Cuda*'
step suite_backend 60 "$B/gpu_backend_test" --gtest_filter='*Cuda*'
step suite_ptx 60 "$B/gpu_ptx_test"
step gemm 120 "$B/kiln_gpu_bench" --target "$TARGET" --gemm 4096 --repeat 10 --json
step resnet18 120 "$B/kiln_gpu_bench" --target "$TARGET" --model "$MODELS/resnet18.onnx" \
     --input "$MODELS/resnet18.input.npy" --reference "$MODELS/resnet18.output.npy" --repeat 50 --json
for s in suite_runtime suite_backend suite_ptx; do
  echo "-- $s:"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran" "$OUT/$s.out" | head -20
done
"$PYTHON" - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        return json.loads(open(os.path.join(out, name + ".out")).read().strip().splitlines()[-1])
    except Exception as e:
        return {"error": f"no result ({e}); see {name}.log"}
peers, gemm, net = load("peers"), load("gemm"), load("resnet18")
r = {"peers": peers, "kiln_gemm": gemm, "kiln_resnet18": net}
def ratio(a, b):
    return round(a / b, 3) if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else None
r["resnet18_latency_ratio_kiln_over_pytorch"] = ratio(net.get("median_ms"), peers.get("resnet18_ms"))
r["gemm4096_ratio_kiln_over_cublas_gflops"] = ratio(gemm.get("best_gflops"), peers.get("gemm4096_gflops"))
json.dump(r, open(os.path.join(out, "gpu_bench.json"), "w"), indent=1)
def num(v, fmt):
    return format(v, fmt) if isinstance(v, (int, float)) else "-"
print(f"{'':28}{'Kiln':>12}{'peer':>12}{'ratio':>8}")
print(f"{'ResNet-18 latency (ms)':28}{num(net.get('median_ms'), '.3f'):>12}{num(peers.get('resnet18_ms'), '.3f'):>12}"
      f"{num(r['resnet18_latency_ratio_kiln_over_pytorch'], '.2f'):>8}   (PyTorch {peers.get('torch', '?')}, cuDNN)")
print(f"{'GEMM 4096 fp32 (GFLOP/s)':28}{num(gemm.get('best_gflops'), '.0f'):>12}{num(peers.get('gemm4096_gflops'), '.0f'):>12}"
      f"{num(r['gemm4096_ratio_kiln_over_cublas_gflops'], '.2f'):>8}   (cuBLAS, TF32 off; Kiln tile {gemm.get('best_tile')})")
print(f"ResNet-18 error against PyTorch: {net.get('error')} of the largest output")
for k in ("error",):
    for name, v in (("peers", peers), ("gemm", gemm), ("resnet18", net)):
        if k in v and isinstance(v[k], str): print(f"{name}: {v[k]}")
PY
