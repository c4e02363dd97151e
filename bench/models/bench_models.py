#!/usr/bin/python3
"""ResNet-18 and MobileNetV2 at batch 1: Kiln (`kiln run --json`) next to PyTorch
(frozen TorchScript, torch.jit.optimize_for_inference) with the same number of
threads, in one script; prints the latencies and the ratio.

Usage: /usr/bin/python3 bench/models/bench_models.py --kiln PATH_TO_KILN
           [--threads N] [--repeat N] [--models resnet18,mobilenet_v2] [--json]

PATH_TO_KILN: the `kiln` program, build/tools/kiln/kiln. The models are exported with random weights by
examples/models/export_models.py into a temporary directory.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORT = os.path.join(HERE, "..", "..", "examples", "models", "export_models.py")


def torch_latency(name, threads, repeat):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    times = []
    with torch.no_grad():
        # The strongest PyTorch inference path: frozen TorchScript with conv-bn folding
        # and oneDNN layouts (torch.jit.optimize_for_inference).
        model = torch.jit.optimize_for_inference(torch.jit.script(model))
        for _ in range(3):
            model(x)
        for _ in range(repeat):
            t0 = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - t0) * 1e3)
    return {"median": float(np.median(times)), "min": min(times), "max": max(times)}


def kiln_latency(kiln, onnx_path, threads, repeat):
    env = dict(os.environ, KILN_NUM_THREADS=str(threads))
    out = subprocess.run([kiln, "run", onnx_path, "--target", "cpu", "--repeat", str(repeat), "--json"],
                         env=env, check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    return r["latency_ms"], r["kernels"], r["compile_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--models", default="resnet18,mobilenet_v2")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    models = a.models.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, EXPORT, d] + models, check=True, capture_output=True)
        for m in models:
            k, kernels, compile_ms = kiln_latency(a.kiln, os.path.join(d, m + ".onnx"), a.threads, a.repeat)
            t = torch_latency(m, a.threads, a.repeat)
            rows.append({"model": m, "threads": a.threads, "kiln_ms": k, "pytorch_ms": t, "kernels": kernels,
                         "compile_ms": compile_ms, "ratio": k["median"] / t["median"]})
    if a.json:
        print(json.dumps({"benchmark": "models", "batch": 1, "results": rows}, indent=2))
        return
    print(f"batch 1, {a.threads} thread(s), median of {a.repeat} runs; ratio = Kiln / PyTorch (lower is better)")
    print(f"{'model':<14}{'kernels':>8}{'Kiln ms':>11}{'PyTorch ms':>12}{'ratio':>8}")
    for r in rows:
        print(f"{r['model']:<14}{r['kernels']:>8}{r['kiln_ms']['median']:>11.2f}{r['pytorch_ms']['median']:>12.2f}"
              f"{r['ratio']:>8.2f}")


if __name__ == "__main__":
    main()
