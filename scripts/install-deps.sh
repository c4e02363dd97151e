#!/usr/bin/env bash
# Installs the Debian packages Kiln builds and tests with, only those that are missing.
# Idempotent: a second run installs nothing and prints nothing but a summary line.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev
  verilator libsystemc-dev
  yosys nextpnr-ice40 fpga-icestorm
  llvm-19-dev
  libxgboost-dev
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  libopenblas-dev libdnnl-dev
  libopenmpi-dev openmpi-bin
  libdlpack-dev
  pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo  # backend-gpu: OpenCL on the CPU (pocl)
  clang-19 libclang-rt-19-dev libfuzzer-19-dev
  python3-numpy python3-onnx python3-torch python3-torchvision python3-sklearn
  pybind11-dev python3-dev python3-pytest python3-matplotlib
  python3-setuptools python3-wheel python3-pip  # pip install . (pyproject.toml, setup.py)
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
