#!/usr/bin/python3
"""The Python API's overhead on a whole model: ResNet-18 (random weights, batch 1,
examples/models/export_models.py) built by kiln.build_model for the CPU, timed in one
process two ways on the same input and threads:
  C++     the executor's run alone, timed in C++ (GraphModule.time_evaluator("run"):
          a loop over graph::Executor::run with no Python in it)
  Python  `module(x)` from a Python loop: the binding's argument checks, the input's
          copy in, the run, the output array back
Each round times one C++ batch and one Python batch back to back, alternating which
goes first, so that a disturbance of the shared machine falls on both sides of a
round; the overhead is the median over the rounds of Python / C++ - 1 within a round.
Beside it, the ratio of each side's minimum over all rounds, minus 1: at two threads
its noise is about 2% either way here, since one lucky run decides each minimum. The bench also
times what the Python call adds around the run on its own (set_input and get_output
from Python, no model run: microseconds, hardly disturbed) and gives its share of the
C++ latency.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/python/overhead.py
           [--model resnet18] [--threads N] [--number N] [--rounds N] [--json]
Progress lines go to stderr, with --json too.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import kiln

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "..", "examples", "models")


def progress(msg):
    print(msg, file=sys.stderr, flush=True)


def python_call_seconds(module, x, number):
    t0 = time.perf_counter()
    for _ in range(number):
        module(x)
    return (time.perf_counter() - t0) / number


def python_io_seconds(module, x, number):
    """What module(x) does besides Executor::run: the input in, the output back."""
    t0 = time.perf_counter()
    for _ in range(number):
        module.set_input(0, x)
        module.get_output(0)
    return (time.perf_counter() - t0) / number


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="resnet18", help="a model name of examples/models/export_models.py")
    ap.add_argument("--threads", type=int, default=0, help="the CPU runtime's threads (default: its own choice)")
    ap.add_argument("--number", type=int, default=1, help="runs per timed batch")
    ap.add_argument("--rounds", type=int, default=200, help="turns of C++ and Python; each keeps its minimum")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.threads:
        kiln.set_num_threads(a.threads)

    with tempfile.TemporaryDirectory() as d:
        progress(f"exporting {a.model} (export_models.py)")
        subprocess.run([sys.executable, os.path.join(MODELS, "export_models.py"), d, a.model], check=True,
                       capture_output=True)
        x = np.load(os.path.join(d, a.model + ".input.npy"))
        progress(f"building {a.model} for the CPU (kiln.build_model)")
        t0 = time.perf_counter()
        module = kiln.build_model(kiln.frontend.from_onnx(os.path.join(d, a.model + ".onnx")), target="cpu")
        build_s = time.perf_counter() - t0

    module(x)  # warm up: the JIT's first call, the thread pool, the caches
    module.set_input(0, x)
    cpp_timer = module.time_evaluator("run", number=a.number, repeat=1)
    cpp, py = [], []
    for r in range(a.rounds):
        # alternating which goes first, so that neither side always follows the other
        if r % 2 == 0:
            cpp.append(cpp_timer().results[0])
            py.append(python_call_seconds(module, x, a.number))
        else:
            py.append(python_call_seconds(module, x, a.number))
            cpp.append(cpp_timer().results[0])
        if (r + 1) % 20 == 0 or r + 1 == a.rounds:
            progress(f"  round {r + 1}/{a.rounds}: minimum so far C++ {min(cpp) * 1e3:.3f} ms, "
                     f"Python {min(py) * 1e3:.3f} ms")
    io_ms = min(python_io_seconds(module, x, 100) for _ in range(20)) * 1e3
    cpp_ms, py_ms = min(cpp) * 1e3, min(py) * 1e3
    paired = sorted(p / c for p, c in zip(py, cpp))
    median_paired = paired[len(paired) // 2] - 1
    row = {"model": a.model, "threads": kiln.get_num_threads(), "kernels": module.num_kernels,
           "build_s": build_s, "number": a.number, "rounds": a.rounds,
           "cpp_ms": cpp_ms, "python_ms": py_ms, "python_extra_ms": py_ms - cpp_ms, "overhead": median_paired, "overhead_of_minima": py_ms / cpp_ms - 1,
           "python_io_ms": io_ms, "io_share": io_ms / cpp_ms,
           "cpp_runs_ms": [t * 1e3 for t in cpp], "python_runs_ms": [t * 1e3 for t in py]}
    if a.json:
        print(json.dumps({"benchmark": "python_overhead", "batch": 1, "results": [row]}, indent=2))
        return
    print(f"batch 1, {row['threads']} thread(s); {a.rounds} rounds of {a.number} run(s) each way; ms are minima")
    print("overhead: the median over rounds of (Python / C++ - 1) within a round; minima: min Python / min C++ - 1")
    print("I/O ms: set_input + get_output from Python without a run; its share of the C++ latency")
    print(f"{'model':<12}{'kernels':>8}{'C++ ms':>10}{'Python ms':>11}{'overhead':>10}{'minima':>9}{'I/O ms':>9}"
          f"{'share':>8}")
    print(f"{a.model:<12}{row['kernels']:>8}{cpp_ms:>10.3f}{py_ms:>11.3f}{median_paired * 100:>9.2f}%"
          f"{row['overhead_of_minima'] * 100:>8.2f}%{io_ms:>9.4f}{row['io_share'] * 100:>7.3f}%")


if __name__ == "__main__":
    main()
