#!/usr/bin/python3
"""Exports models at several ONNX opsets, with dynamic dimensions, for tests/e2e.

Each model is exported once per opset with its batch (and, for the encoders, sequence)
dimensions symbolic, from a dummy input of one shape; PyTorch's reference is then
computed on inputs of another shape, so Kiln must take the dimensions from the inputs
it is given. For each model NAME and opset K it writes, into OUTDIR:
  NAME_opK.onnx              the model
  NAME_opK.input.IN.npy      the value of each input IN (of the reference shape)
  NAME_opK.output.npy        PyTorch's output (float32)

Usage: /usr/bin/python3 export_opset_models.py OUTDIR [--opsets 9,11,13,17] [NAME ...]
NAME: resnet18 mobilenet_v3 lraspp vit encoder (all by default). Random weights with a
fixed seed; nothing is downloaded. Needs Debian's python3-torch, python3-torchvision,
python3-onnx and python3-numpy.
"""
import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "models"))
from export_models import randomize_batch_norms  # noqa: E402  (batch norms given statistics)


class HFEncoder(nn.Module):
    """A Hugging-Face-style (BERT) encoder: word, position and token-type embeddings,
    an attention mask input, post-norm layers with GELU, a tanh pooler. The position ids
    come from the sequence length (arange), the mask is broadcast to the heads."""

    def __init__(self, vocab=500, max_pos=64, hidden=48, heads=4, ffn=96, layers=2):
        super().__init__()
        self.heads = heads
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_pos, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict({
                "q": nn.Linear(hidden, hidden), "k": nn.Linear(hidden, hidden), "v": nn.Linear(hidden, hidden),
                "o": nn.Linear(hidden, hidden), "norm1": nn.LayerNorm(hidden, eps=1e-12),
                "fc1": nn.Linear(hidden, ffn), "fc2": nn.Linear(ffn, hidden), "norm2": nn.LayerNorm(hidden, eps=1e-12)}))
        self.pool = nn.Linear(hidden, hidden)

    def forward(self, ids, mask):
        b, s = ids.shape
        pos = torch.arange(s, dtype=torch.long, device=ids.device).unsqueeze(0)
        x = self.word(ids) + self.position(pos) + self.token_type(torch.zeros_like(ids))
        x = self.norm(x)
        bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * -10000.0
        h = x.shape[-1]
        d = h // self.heads

        def split(t):
            return t.view(b, s, self.heads, d).permute(0, 2, 1, 3)

        for layer in self.layers:
            q, k, v = split(layer["q"](x)), split(layer["k"](x)), split(layer["v"](x))
            att = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d) + bias, dim=-1)
            ctx = torch.matmul(att, v).permute(0, 2, 1, 3).contiguous().view(b, s, h)
            x = layer["norm1"](x + layer["o"](ctx))
            x = layer["norm2"](x + layer["fc2"](nn.functional.gelu(layer["fc1"](x))))
        return torch.tanh(self.pool(x[:, 0]))


def image(batch, size):
    return (torch.randn(batch, 3, size, size),)


def build(name):
    """(model, dummy inputs, reference inputs, input names, dynamic axes)."""
    img_axes = {"input": {0: "batch"}}
    if name == "resnet18":
        return torchvision.models.resnet18(weights=None), image(1, 64), image(2, 64), ["input"], img_axes
    if name == "mobilenet_v3":
        return torchvision.models.mobilenet_v3_small(weights=None), image(1, 64), image(2, 64), ["input"], img_axes
    if name == "lraspp":
        # A segmentation head: LR-ASPP on MobileNetV3, bilinear Resize to the input size.
        m = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                      num_classes=5)
        return m, image(1, 64), image(2, 64), ["input"], img_axes
    if name == "vit":
        m = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                                 hidden_dim=48, mlp_dim=96, num_classes=10)
        nn.init.normal_(m.heads.head.weight, std=0.2)  # torchvision starts the head at zero
        return m, image(1, 32), image(2, 32), ["input"], img_axes
    if name == "encoder":
        def ids(b, s):
            g = torch.Generator().manual_seed(b * 100 + s)
            mask = torch.ones(b, s, dtype=torch.long)
            mask[-1, s - 3:] = 0  # the last sequence is padded
            return (torch.randint(0, 500, (b, s), generator=g), mask)
        axes = {"ids": {0: "batch", 1: "sequence"}, "mask": {0: "batch", 1: "sequence"}}
        return HFEncoder(), ids(1, 16), ids(2, 24), ["ids", "mask"], axes
    raise SystemExit(f"unknown model {name}")


class Wrapped(nn.Module):
    """The first tensor of a model's output (the segmentation models return a dict)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, *xs):
        y = self.m(*xs)
        return y["out"] if isinstance(y, dict) else y


def export(name, opset, outdir):
    torch.manual_seed(0)
    model, dummy, ref_inputs, input_names, axes = build(name)
    randomize_batch_norms(model)
    model = Wrapped(model).eval()
    axes = dict(axes, output={0: "batch"})
    tag = f"{name}_op{opset}"
    path = os.path.join(outdir, tag + ".onnx")
    # Traced with gradients on: under no_grad nn.MultiheadAttention takes its fused fast
    # path, which has no ONNX export.
    torch.onnx.export(model, dummy, path, opset_version=opset, input_names=input_names, output_names=["output"],
                      dynamic_axes=axes, do_constant_folding=True)
    with torch.no_grad():
        y = model(*ref_inputs)
    for name, x in zip(input_names, ref_inputs):
        np.save(os.path.join(outdir, f"{tag}.input.{name}.npy"), x.numpy())
    np.save(os.path.join(outdir, f"{tag}.output.npy"), y.numpy().astype(np.float32))
    print(f"{tag}: {path}, inputs {[tuple(x.shape) for x in ref_inputs]}, output {tuple(y.shape)}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("outdir")
    p.add_argument("--opsets", default="9,11,13,17")
    p.add_argument("names", nargs="*", default=["resnet18", "mobilenet_v3", "lraspp", "vit", "encoder"])
    a = p.parse_intermixed_args()
    os.makedirs(a.outdir, exist_ok=True)
    torch.set_num_threads(1)
    for name in a.names:
        for opset in (int(k) for k in a.opsets.split(",")):
            export(name, opset, a.outdir)


if __name__ == "__main__":
    main()
