#!/usr/bin/python3
"""The peers of bench/gpu on a lent GPU: PyTorch's CUDA path and cuBLAS.

Exports ResNet-18 (random weights, seed 0, batch 1) to ONNX with its input and PyTorch's
CPU float32 output, for kiln_gpu_bench to compile and check; then times, on the GPU,
ResNet-18 in eval mode (cuDNN, with and without cudnn.benchmark, the faster kept) and a
float32 4096 x 4096 x 4096 matrix product (cuBLAS), TF32 off so that both sides compute
in float32. CUDA events, warm-ups, the median of the timed runs.

Usage: python3 peers.py OUTDIR  (writes OUTDIR/resnet18.{onnx,input.npy,output.npy}
and prints one JSON object)
"""
import json
import os
import sys

import numpy as np
import torch
import torchvision


def export(outdir):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        y = model(x)
    path = os.path.join(outdir, "resnet18.onnx")
    kwargs = dict(opset_version=13, input_names=["input"], output_names=["output"], do_constant_folding=True)
    try:
        torch.onnx.export(model, x, path, dynamo=False, **kwargs)
        exporter = "torchscript"
    except Exception as e:  # an exporter without the TorchScript path
        print(f"peers: TorchScript export failed ({e}); the default exporter", file=sys.stderr)
        torch.onnx.export(model, (x,), path, **kwargs)
        exporter = "default"
    np.save(os.path.join(outdir, "resnet18.input.npy"), x.numpy())
    np.save(os.path.join(outdir, "resnet18.output.npy"), y.numpy().astype(np.float32))
    return model, x, exporter


def time_cuda(fn, warmup=10, runs=50):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    model, x, exporter = export(outdir)
    result = {"exporter": exporter, "torch": torch.__version__}
    if not torch.cuda.is_available():
        result["error"] = "torch sees no CUDA device"
        print(json.dumps(result))
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    result["device"] = torch.cuda.get_device_name(0)
    m, xc = model.cuda(), x.cuda()
    best = None
    for bench in (False, True):
        torch.backends.cudnn.benchmark = bench
        with torch.no_grad():
            ms = time_cuda(lambda: m(xc))
        result[f"resnet18_ms_cudnn_benchmark_{str(bench).lower()}"] = ms
        best = ms if best is None else min(best, ms)
    result["resnet18_ms"] = best
    n = 4096
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    ms = time_cuda(lambda: torch.matmul(a, b), warmup=5, runs=20)
    result["gemm4096_ms"] = ms
    result["gemm4096_gflops"] = 2 * n**3 / (ms / 1e3) / 1e9
    print(json.dumps(result))


if __name__ == "__main__":
    main()
