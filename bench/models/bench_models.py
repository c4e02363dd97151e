#!/usr/bin/python3
"""Whole models at batch 1, in one run and on the same inputs: Kiln (`kiln run --json`)
next to PyTorch (traced TorchScript, frozen with torch.jit.optimize_for_inference) and
ONNX Runtime 1.30 (its CPU build from npm, on the same ONNX file Kiln reads), each with
the same number of threads; prints the latencies and the ratios Kiln / peer.

Usage: /usr/bin/python3 bench/models/bench_models.py --kiln PATH_TO_KILN
           [--threads 1,2] [--repeat N] [--rounds R]
           [--models resnet18,mobilenet_v2,bert_tiny,bert_base,matmul1024,matmul4096,tv.ARCH@SIZE,...]
           [--ort PREFIX] [--no-ort] [--gemm-bench PATH] [--records MODEL=FILE ...] [--layers] [--json]

PATH_TO_KILN: the `kiln` program, build/tools/kiln/kiln. The models are exported with
random weights by examples/models/export_models.py into a temporary directory
(bert_tiny: the 2-layer encoder, hidden 64, 32 tokens; bert_base: BERT-base's encoder,
12 layers, hidden 768, 12 heads, 128 tokens; tv.ARCH@SIZE: any torchvision
classification or video model, e.g. tv.regnet_y_400mf@128 or tv.mc3_18@112, on a
SIZE x SIZE image or 16 frames of it, export_models.py's names). matmulN: one ONNX MatMul of an N x N
input by a constant N x N weight, also timed with OpenBLAS's cblas_sgemm at its best
kernel (bench/gemm's gemm_bench --peer-only, PATH default build/bench/gemm/gemm_bench).
--ort PREFIX: where onnxruntime-node is (installed there by npm when missing; default
build/peers). Each system's latency is the median of N runs (default 10), measured in
R rounds (default 3) that take Kiln, PyTorch and ONNX Runtime in turn; the best round
counts for each, so a slow minute of a shared machine does not fall on one side only.
The ratio to ONNX Runtime (and PyTorch) is also given round by round, Kiln and the peer
timed minutes apart: its median over the rounds and its range (`paired_ratio_*`).
--records MODEL=FILE: Kiln also runs MODEL with these `kiln tune` records (in the same
rounds), reported with its gain over the default schedules: the best rounds' ratio, and
round by round (the default and the records' runs back to back, `paired_gain_tuned`).
--layers: also layer by layer against ONNX Runtime: Kiln's per-kernel medians (`kiln run
--json`'s profile) next to ONNX Runtime's own per-node times (its profiler), the
convolutions and matrix products lined up in the order they run where both have as
many (each fused with its bias and activation on both sides), else their sums.
"""
import argparse
import json
import os
import re
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


def matmul_model(n, d):
    """An ONNX MatMul of an n x n input by a constant n x n weight, and its input."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.RandomState(0)
    w = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["input", "W"], ["output"])], f"matmul{n}",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [n, n])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [n, n])],
                          [numpy_helper.from_array(w, "W")])
    path, x_path = os.path.join(d, f"matmul{n}.onnx"), os.path.join(d, f"matmul{n}.input.npy")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    x = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    np.save(x_path, x)
    return path, x_path, x, w


def torch_matmul_latency(x, w, threads, repeat):
    torch.set_num_threads(threads)
    xt, wt = torch.from_numpy(x), torch.from_numpy(w)
    times = []
    with torch.no_grad():
        for _ in range(3):
            torch.matmul(xt, wt)
        for _ in range(repeat):
            t0 = time.perf_counter()
            torch.matmul(xt, wt)
            times.append((time.perf_counter() - t0) * 1e3)
    return stats(times)


def openblas_latency(gemm_bench, n, threads):
    """OpenBLAS at its fastest kernel for this CPU, as gemm_bench chooses it: (stats, kernel, probe).
    gemm_bench reports its best run (at least 1 s of runs), so the peer's figure is its
    best time where Kiln's is the median: the ratio leans towards the peer."""
    out = subprocess.run([gemm_bench, "--peer-only", "--no-int8", "--sizes", str(n), "--threads", str(threads), "--json",
                          "--min-time", "1"], check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    ms = 2.0 * n ** 3 / (r["rows"][0]["peer_gflops"] * 1e9) * 1e3
    return {"median": ms, "min": ms, "max": ms}, r["peer"], r["openblas_probe"]


def kiln_latency(kiln, onnx_path, x_path, threads, repeat, records=None):
    env = dict(os.environ, KILN_NUM_THREADS=str(threads))
    cmd = [kiln, "run", onnx_path, "--target", "cpu", "--input", f"input={x_path}", "--repeat", str(repeat), "--json"]
    if records:
        cmd += ["--records", records]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    return r["latency_ms"], r["kernels"], r["compile_ms"]


ANCHOR_KERNEL = re.compile(r"^k\d+_(conv2d|matmul|dense|batch_matmul)")
ANCHOR_NODE = {"Conv", "FusedConv", "Gemm", "FusedGemm", "MatMul", "FusedMatMul", "NchwcConv"}


def layers(kiln, onnx_path, x_path, threads, repeat, node_modules, inputs):
    """Kiln's convolutions and products against ONNX Runtime's, one by one where they pair up."""
    env = dict(os.environ, KILN_NUM_THREADS=str(threads))
    out = subprocess.run([kiln, "run", onnx_path, "--target", "cpu", "--input", f"input={x_path}", "--repeat", str(repeat),
                          "--json"], env=env, check=True, capture_output=True, text=True).stdout
    kernels = json.loads(out)["profile"]
    nodes = ort_peer.node_profile(node_modules, onnx_path, threads, repeat, inputs)
    k_anchor = [(k["kernel"], k["median_ms"]) for k in kernels if ANCHOR_KERNEL.match(k["kernel"])]
    o_anchor = [(n, op, ms) for n, op, ms in nodes if op in ANCHOR_NODE]
    r = {"kiln_kernels_ms": sum(k["median_ms"] for k in kernels), "ort_nodes_ms": sum(ms for _, _, ms in nodes),
         "kiln_anchors": len(k_anchor), "ort_anchors": len(o_anchor),
         "kiln_anchors_ms": sum(ms for _, ms in k_anchor), "ort_anchors_ms": sum(ms for _, _, ms in o_anchor)}
    if len(k_anchor) == len(o_anchor):
        r["pairs"] = [{"kiln_kernel": k, "kiln_ms": kms, "ort_node": n, "ort_op": op, "ort_ms": oms, "ratio": kms / oms if oms else None}
                      for (k, kms), (n, op, oms) in zip(k_anchor, o_anchor)]
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3, help="turns of Kiln and the peers; each keeps its best median")
    ap.add_argument("--models", default="resnet18,mobilenet_v2,bert_tiny,bert_base,matmul1024,matmul4096")
    ap.add_argument("--gemm-bench", default=os.path.join(HERE, "..", "..", "build", "bench", "gemm", "gemm_bench"))
    ap.add_argument("--ort", default=os.path.join(HERE, "..", "..", "build", "peers"))
    ap.add_argument("--no-ort", action="store_true", help="leave ONNX Runtime out")
    ap.add_argument("--records", action="append", default=[], metavar="MODEL=FILE",
                    help="also time Kiln with these `kiln tune` records for MODEL (repeatable)")
    ap.add_argument("--layers", action="store_true", help="also layer by layer against ONNX Runtime's profiler")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.layers and a.no_ort:
        ap.error("--layers compares with ONNX Runtime: leave out --no-ort")
    records = {}
    for r in a.records:
        model, sep, path = r.partition("=")
        if not sep or not os.path.exists(path):
            ap.error(f"--records {r}: give MODEL=FILE with an existing records file")
        records[model] = os.path.abspath(path)
    models = a.models.split(",")
    threads = [int(t) for t in a.threads.split(",")]
    node_modules = None if a.no_ort else ort_peer.ensure(a.ort)
    rows = []
    started = time.time()
    with tempfile.TemporaryDirectory() as d:
        exported = [m for m in models if not m.startswith("matmul")]
        if exported:
            subprocess.run([sys.executable, os.path.join(MODELS, "export_models.py"), d] + exported, check=True,
                           capture_output=True)
        steps, done = len(models) * len(threads), 0
        for m in models:
            w = None
            if m.startswith("matmul"):
                path, x_path, x, w = matmul_model(int(m[len("matmul"):]), d)
            else:
                f = m.replace("@", "_")  # as export_models.py names the files
                path, x_path = os.path.join(d, f + ".onnx"), os.path.join(d, f + ".input.npy")
                x = np.load(x_path)
            input_name = onnx.load(path, load_external_data=False).graph.input[0].name
            for t in threads:
                # Rounds: Kiln and each peer in turn, each system's best median kept, so
                # that a slow minute of a shared machine does not fall on one side only.
                trials = {}
                for _ in range(a.rounds):
                    k, kernels, compile_ms = kiln_latency(a.kiln, path, x_path, t, a.repeat)
                    trials.setdefault("kiln_ms", []).append(k)
                    if m in records:
                        trials.setdefault("kiln_tuned_ms", []).append(
                            kiln_latency(a.kiln, path, x_path, t, a.repeat, records[m])[0])
                    trials.setdefault("pytorch_ms", []).append(torch_matmul_latency(x, w, t, a.repeat) if w is not None else
                                                               torch_latency(m, x, t, a.repeat))
                    if node_modules:
                        trials.setdefault("ort_ms", []).append(ort_peer.latency(node_modules, path, t, a.repeat, {input_name: x}))
                row = {"model": m, "threads": t, "kernels": kernels, "compile_ms": compile_ms}
                for key, runs in trials.items():
                    row[key] = min(runs, key=lambda r: r["median"])
                k = row["kiln_ms"]
                if w is not None and os.path.exists(a.gemm_bench):
                    row["openblas_ms"], row["openblas_kernel"], row["openblas_probe"] = openblas_latency(
                        a.gemm_bench, w.shape[0], t)
                for peer in ("pytorch", "ort", "openblas"):
                    if peer + "_ms" in row:
                        row["ratio_" + peer] = k["median"] / row[peer + "_ms"]["median"]
                        if "kiln_tuned_ms" in row:
                            row["ratio_tuned_" + peer] = row["kiln_tuned_ms"]["median"] / row[peer + "_ms"]["median"]
                # The same ratio round by round (Kiln and the peer minutes apart, not a
                # round apart): its median over the rounds, and its spread.
                for peer in ("pytorch", "ort"):
                    if peer + "_ms" in trials:
                        paired = [a["median"] / b["median"] for a, b in zip(trials["kiln_ms"], trials[peer + "_ms"])]
                        row["paired_ratio_" + peer] = {"median": float(np.median(paired)), "min": min(paired), "max": max(paired)}
                # Default / with records round by round (the two runs seconds apart): the
                # records' gain with the machine's drift between rounds taken out.
                if "kiln_tuned_ms" in trials:
                    paired = [a["median"] / b["median"] for a, b in zip(trials["kiln_ms"], trials["kiln_tuned_ms"])]
                    row["paired_gain_tuned"] = {"median": float(np.median(paired)), "min": min(paired), "max": max(paired)}
                if a.layers:
                    row["layers"] = layers(a.kiln, path, x_path, t, a.repeat, node_modules, {input_name: x})
                rows.append(row)
                done += 1
                left = (time.time() - started) / done * (steps - done)  # progress on stderr, with --json too
                print(f"  {m}, {t} thread(s) done ({done}/{steps}, ETA {left:.0f} s)", file=sys.stderr, flush=True)
    if a.json:
        print(json.dumps({"benchmark": "models", "batch": 1, "repeat": a.repeat, "rounds": a.rounds, "results": rows}, indent=2))
        return
    print(f"batch 1, the best of {a.rounds} rounds' medians of {a.repeat} runs; ratio = Kiln / peer (lower is better for Kiln)")
    print(f"{'model':<14}{'threads':>8}{'kernels':>8}{'Kiln ms':>10}{'PyTorch ms':>12}{'ORT ms':>9}{'BLAS ms':>9}"
          f"{'/PyTorch':>10}{'/ORT':>7}{'/BLAS':>7}")

    def cell(r, key, width, fmt=".2f"):
        return f"{r[key]['median'] if isinstance(r.get(key), dict) else r[key]:>{width}{fmt}}" if key in r else f"{'-':>{width}}"

    for r in rows:
        print(f"{r['model']:<14}{r['threads']:>8}{r['kernels']:>8}{r['kiln_ms']['median']:>10.2f}"
              f"{cell(r, 'pytorch_ms', 12)}{cell(r, 'ort_ms', 9)}{cell(r, 'openblas_ms', 9)}"
              f"{cell(r, 'ratio_pytorch', 10)}{cell(r, 'ratio_ort', 7)}{cell(r, 'ratio_openblas', 7)}")
    paired = [r for r in rows if "paired_ratio_ort" in r]
    if paired:
        print("Kiln / ORT round by round (median over the rounds, min - max):")
        for r in paired:
            p = r["paired_ratio_ort"]
            print(f"  {r['model']:<14}{r['threads']:>2} thread(s): {p['median']:.2f} ({p['min']:.2f} - {p['max']:.2f})")
    tuned = [r for r in rows if "kiln_tuned_ms" in r]
    if tuned:
        print("with `kiln tune` records:")
        print(f"{'model':<14}{'threads':>8}{'default ms':>12}{'tuned ms':>10}{'gain':>7}{'/ORT':>7}  gain round by round")
        for r in tuned:
            g = r["paired_gain_tuned"]
            print(f"{r['model']:<14}{r['threads']:>8}{r['kiln_ms']['median']:>12.2f}{r['kiln_tuned_ms']['median']:>10.2f}"
                  f"{r['kiln_ms']['median'] / r['kiln_tuned_ms']['median']:>7.2f}{cell(r, 'ratio_tuned_ort', 7)}"
                  f"  {g['median']:.3f} ({g['min']:.3f} - {g['max']:.3f})")
    for r in (r for r in rows if "layers" in r):
        L = r["layers"]
        print(f"{r['model']}, {r['threads']} thread(s), layer by layer: kernels {L['kiln_kernels_ms']:.2f} ms in Kiln, "
              f"nodes {L['ort_nodes_ms']:.2f} ms in ONNX Runtime; convolutions and products {L['kiln_anchors']} / "
              f"{L['ort_anchors']}: {L['kiln_anchors_ms']:.2f} / {L['ort_anchors_ms']:.2f} ms")
        for p in L.get("pairs", []):
            print(f"  {p['kiln_kernel']:<36}{p['kiln_ms']:>9.3f}  {p['ort_node'][:44]:<46}{p['ort_ms']:>9.3f}"
                  f"{p['ratio'] if p['ratio'] is not None else float('nan'):>7.2f}")
    blas = [r for r in rows if "openblas_kernel" in r]
    if blas:
        print(f"OpenBLAS: {blas[0]['openblas_kernel']}, the fastest of: {blas[0]['openblas_probe']}")


if __name__ == "__main__":
    main()
