#!/usr/bin/python3
"""Quantized models on the CPU: ResNet-18 (random weights, examples/models) and the
digits CNN (examples/models/digits.py, trained on scikit-learn's digits), each quantized
by `kiln quantize` (power-of-two scales), at batch 1. In one run, same threads:
Kiln int8 (VNNI where the CPU has it), Kiln int8 without VNNI (the 16-bit fallback,
`-mattr=-avx512vnni,-avxvnni`), Kiln fp32, optionally a baseline `kiln` (another build,
e.g. before the int8 kernels) and ONNX Runtime on the same QDQ and fp32 files. The int8
outputs of every Kiln are compared bit for bit on one input.

Usage: /usr/bin/python3 bench/int8_cpu/bench_int8_cpu.py --kiln build/tools/kiln/kiln
           [--baseline OTHER_KILN] [--ort NODE_MODULES_DIR] [--threads N] [--repeat N]
           [--models resnet18,digits] [--json]

--ort: a node_modules folder holding onnxruntime-node (npm install --ignore-scripts
onnxruntime-node@1.30.0), driven by /usr/bin/node.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import ort_peer  # noqa: E402
MODELS = os.path.join(HERE, "..", "..", "examples", "models")
NO_VNNI = "llvm -mattr=-avx512vnni,-avxvnni"



def run(cmd, env=None):
    return subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout


def make_models(d, names):
    """name -> (fp32 path, int8 path, input shape)"""
    out = {}
    rng = np.random.default_rng(0)
    if "resnet18" in names:
        run([sys.executable, os.path.join(MODELS, "export_models.py"), d, "resnet18"])
        cal = os.path.join(d, "resnet18_calibration")
        os.makedirs(cal, exist_ok=True)
        for i in range(8):
            np.save(os.path.join(cal, f"x{i}.npy"), rng.standard_normal((1, 3, 224, 224)).astype(np.float32))
        out["resnet18"] = (os.path.join(d, "resnet18.onnx"), cal, [1, 3, 224, 224])
    if "digits" in names:
        dd = os.path.join(d, "digits")
        run([sys.executable, os.path.join(MODELS, "digits.py"), dd])
        out["digits"] = (os.path.join(dd, "digits.onnx"), os.path.join(dd, "calibration"), [1, 1, 8, 8])
    return out


def kiln_latency(kiln, path, target, threads, repeat):
    env = dict(os.environ, KILN_NUM_THREADS=str(threads))
    r = json.loads(run([kiln, "run", path, "--target", target, "--repeat", str(repeat), "--json"], env))
    return {"latency_ms": r["latency_ms"], "compile_ms": r["compile_ms"], "kernels": r["kernels"]}


def kiln_output(kiln, path, target, x_path, out_path):
    name = "input" if "resnet18" in path else "x"
    run([kiln, "run", path, "--target", target, "--input", f"{name}={x_path}", "--output", out_path, "--repeat", "1"])
    return np.load(out_path)


def ort_latency(node_modules, path, threads, repeat, shape):
    m = onnx.load(path)
    inits = {t.name for t in m.graph.initializer}
    name = next(i.name for i in m.graph.input if i.name not in inits)
    x = np.random.default_rng(2).random(shape, dtype=np.float32)
    return {"latency_ms": ort_peer.latency(node_modules, path, threads, repeat, {name: x})}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--baseline", help="another kiln program to time on the same int8 models")
    ap.add_argument("--ort", help="a node_modules folder with onnxruntime-node")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--models", default="resnet18,digits")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for name, (fp32, cal, shape) in make_models(d, a.models.split(",")).items():
            q = fp32[:-5] + ".q.onnx"
            run([a.kiln, "quantize", fp32, "--calibrate", cal, "-o", q])
            x = os.path.join(d, name + ".x.npy")
            np.save(x, np.random.default_rng(1).random(shape, dtype=np.float32))
            row = {"model": name, "threads": a.threads,
                   "kiln_int8": kiln_latency(a.kiln, q, "cpu", a.threads, a.repeat),
                   "kiln_int8_no_vnni": kiln_latency(a.kiln, q, NO_VNNI, a.threads, a.repeat),
                   "kiln_fp32": kiln_latency(a.kiln, fp32, "cpu", a.threads, a.repeat)}
            outs = {"kiln_int8": kiln_output(a.kiln, q, "cpu", x, os.path.join(d, "o1.npy")),
                    "kiln_int8_no_vnni": kiln_output(a.kiln, q, NO_VNNI, x, os.path.join(d, "o2.npy"))}
            if a.baseline:
                # The naive int8 path is slow: fewer runs.
                row["baseline_int8"] = kiln_latency(a.baseline, q, "cpu", a.threads, max(1, a.repeat // 5))
                outs["baseline_int8"] = kiln_output(a.baseline, q, "cpu", x, os.path.join(d, "o3.npy"))
            row["int8_outputs_identical"] = all(np.array_equal(v, outs["kiln_int8"]) for v in outs.values())
            if a.ort:
                row["ort_int8"] = ort_latency(a.ort, q, a.threads, a.repeat, shape)
                row["ort_fp32"] = ort_latency(a.ort, fp32, a.threads, a.repeat, shape)
            base = row["kiln_int8"]["latency_ms"]["median"]
            row["ratios"] = {k: base / v["latency_ms"]["median"] for k, v in row.items()
                             if isinstance(v, dict) and "latency_ms" in v and k != "kiln_int8"}
            rows.append(row)
    if a.json:
        print(json.dumps({"benchmark": "int8_cpu", "batch": 1, "results": rows}, indent=2))
        return
    print(f"batch 1, {a.threads} thread(s), median ms; ratio = Kiln int8 / that column (lower is better for Kiln)")
    for r in rows:
        cols = [k for k in r if isinstance(r[k], dict) and "latency_ms" in r[k]]
        print(f"{r['model']}: " + ", ".join(f"{k} {r[k]['latency_ms']['median']:.2f}" for k in cols) +
              f"; int8 outputs identical: {r['int8_outputs_identical']}")
        print("  ratios: " + ", ".join(f"{k} {v:.3f}" for k, v in r["ratios"].items()))


if __name__ == "__main__":
    main()
