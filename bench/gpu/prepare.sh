#!/usr/bin/env bash
# Prepares bench/gpu for a lent GPU, here: builds kiln_gpu_bench and the GPU test
# binaries, and copies them, stripped, with the shared libraries that machine lacks
# (ONNX, protobuf, fmt, the OpenCL ICD loader) into .gpu-bench/ at the repository
# root (ignored through .git/info/exclude; the device tool carries it). libnvrtc and
# libcuda are that machine's own (run.sh finds them).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
cmake --build "$BUILD" -j2 --target kiln_gpu_bench gpu_runtime_test gpu_backend_test gpu_ptx_test
grep -qx '/.gpu-bench/' .git/info/exclude 2>/dev/null || echo '/.gpu-bench/' >> .git/info/exclude
rm -rf .gpu-bench
mkdir -p .gpu-bench/lib
bins=("$BUILD/bench/gpu/kiln_gpu_bench" "$BUILD/tests/gpu/gpu_runtime_test" "$BUILD/tests/gpu/gpu_backend_test"
      "$BUILD/tests/gpu/gpu_ptx_test")
for b in "${bins[@]}"; do
  strip -o ".gpu-bench/$(basename "$b")" "$b"
  # Every library but the C runtime's, the compiler's and the CUDA toolkit's.
  ldd "$b" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|libstdc++.so*|libgcc_s.so*|libz.so*|ld-linux*|libnvrtc*|libcuda*) ;;
      *) cp -L -n "$lib" .gpu-bench/lib/ ;;
    esac
  done
done
strip .gpu-bench/lib/*.so* 2>/dev/null || true
du -sh .gpu-bench
ls .gpu-bench .gpu-bench/lib
