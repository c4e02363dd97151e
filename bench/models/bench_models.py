#!/usr/bin/python3
"""Whole models at batch 1, in one run and on the same inputs: Kiln (`kiln run --json`)
next to PyTorch (traced TorchScript, frozen with torch.jit.optimize_for_inference) and
ONNX Runtime 1.30 (its CPU build from npm, on the same ONNX file Kiln reads), each with
the same number of threads; prints the latencies and the ratios Kiln / peer.

Usage: /usr/bin/python3 bench/models/bench_models.py --kiln PATH_TO_KILN
           [--threads 1,2] [--repeat N] [--models resnet18,mobilenet_v2,bert_tiny]
           [--ort PREFIX] [--no-ort] [--json]

PATH_TO_KILN: the `kiln` program, build/tools/kiln/kiln. The models are exported with
random weights by examples/models/export_models.py into a temporary directory
(bert_tiny: the 2-layer encoder, hidden 64, 32 tokens). --ort PREFIX: where
onnxruntime-node is (installed there by npm when missing; default build/peers).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "..", "examples", "models")
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, MODELS)
import export_models  # noqa: E402  (the same models, seeds and inputs as the exported files)
import ort_peer  # noqa: E402


def stats(times):
    return {"median": float(np.median(times)), "min": float(min(times)), "max": float(max(times))}


def torch_latency(name, x, threads, repeat):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model, _, _ = export_models.build(name)
    export_models.randomize_batch_norms(model)
    model.eval()
    xt = torch.from_numpy(x)
    times = []
    with torch.no_grad():
        # The strongest PyTorch inference path: frozen TorchScript with conv-bn folding
        # and oneDNN layouts (torch.jit.optimize_for_inference).
        model = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, xt).eval()))
        for _ in range(3):
            model(xt)
        for _ in range(repeat):
            t0 = time.perf_counter()
            model(xt)
            times.append((time.perf_counter() - t0) * 1e3)
    return stats(times)


def kiln_latency(kiln, onnx_path, x_path, threads, repeat):
    env = dict(os.environ, KILN_NUM_THREADS=str(threads))
    out = subprocess.run([kiln, "run", onnx_path, "--target", "cpu", "--input", f"input={x_path}", "--repeat",
                          str(repeat), "--json"], env=env, check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    return r["latency_ms"], r["kernels"], r["compile_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--models", default="resnet18,mobilenet_v2,bert_tiny")
    ap.add_argument("--ort", default=os.path.join(HERE, "..", "..", "build", "peers"))
    ap.add_argument("--no-ort", action="store_true", help="leave ONNX Runtime out")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    models = a.models.split(",")
    threads = [int(t) for t in a.threads.split(",")]
    node_modules = None if a.no_ort else ort_peer.ensure(a.ort)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, os.path.join(MODELS, "export_models.py"), d] + models, check=True,
                       capture_output=True)
        for m in models:
            path, x_path = os.path.join(d, m + ".onnx"), os.path.join(d, m + ".input.npy")
            x = np.load(x_path)
            input_name = onnx.load(path).graph.input[0].name
            for t in threads:
                k, kernels, compile_ms = kiln_latency(a.kiln, path, x_path, t, a.repeat)
                row = {"model": m, "threads": t, "kernels": kernels, "compile_ms": compile_ms, "kiln_ms": k,
                       "pytorch_ms": torch_latency(m, x, t, a.repeat)}
                if node_modules:
                    row["ort_ms"] = ort_peer.latency(node_modules, path, t, a.repeat, {input_name: x})
                row["ratio_pytorch"] = k["median"] / row["pytorch_ms"]["median"]
                if "ort_ms" in row:
                    row["ratio_ort"] = k["median"] / row["ort_ms"]["median"]
                rows.append(row)
                if not a.json:
                    print(f"  {m}, {t} thread(s) done", file=sys.stderr, flush=True)
    if a.json:
        print(json.dumps({"benchmark": "models", "batch": 1, "repeat": a.repeat, "results": rows}, indent=2))
        return
    print(f"batch 1, median of {a.repeat} runs; ratio = Kiln / peer (lower is better for Kiln)")
    print(f"{'model':<14}{'threads':>8}{'kernels':>8}{'Kiln ms':>10}{'PyTorch ms':>12}{'ORT ms':>9}"
          f"{'/PyTorch':>10}{'/ORT':>7}")
    for r in rows:
        ort = f"{r['ort_ms']['median']:>9.2f}" if "ort_ms" in r else f"{'-':>9}"
        ro = f"{r['ratio_ort']:>7.2f}" if "ratio_ort" in r else f"{'-':>7}"
        print(f"{r['model']:<14}{r['threads']:>8}{r['kernels']:>8}{r['kiln_ms']['median']:>10.2f}"
              f"{r['pytorch_ms']['median']:>12.2f}{ort}{r['ratio_pytorch']:>10.2f}{ro}")


if __name__ == "__main__":
    main()
