#!/usr/bin/python3
"""Exports the example models to ONNX with reference inputs and outputs.

Random weights with a fixed seed (nothing is downloaded). For each model NAME it
writes, into the output directory:
  NAME.onnx            the model (batch 1)
  NAME.input.npy       the input it was run on
  NAME.output.npy      PyTorch's output for that input (float32)

Usage: /usr/bin/python3 export_models.py OUTDIR [NAME ...]
NAME: resnet18 mobilenet_v2 bert_tiny (the default set), bert_base, vgg11 squeezenet1_1
shufflenet_v2_x0_5 densenet121 googlenet efficientnet_b0 convnext_tiny regnet_y_400mf rnn_tiny; resnet18@SIZE
is ResNet-18 on a SIZE x SIZE image, written as resnet18_SIZE; tv.ARCH[@SIZE] any
torchvision classification model (a SIZE x SIZE image, 224 by default) or video model
(16 frames, 112 by default), written as tv.ARCH[_SIZE].
Needs Debian's python3-torch, python3-torchvision, python3-onnx and python3-numpy.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision


class EncoderLayer(nn.Module):
    """A BERT encoder layer: self-attention and a GELU feed-forward, post-norm."""

    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=-1)
        def heads(t):
            return t.reshape(b, s, self.heads, h // self.heads).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(h // self.heads), dim=-1)
        ctx = (att @ v).transpose(1, 2).reshape(b, s, h)
        x = self.norm1(x + self.proj(ctx))
        return self.norm2(x + self.fc2(nn.functional.gelu(self.fc1(x))))


class TinyBert(nn.Module):
    def __init__(self, vocab=1000, seq=32, hidden=64, heads=4, ffn=256, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Parameter(torch.randn(1, seq, hidden) * 0.02)
        self.norm = nn.LayerNorm(hidden)
        self.layers = nn.ModuleList([EncoderLayer(hidden, heads, ffn) for _ in range(layers)])
        self.pool = nn.Linear(hidden, hidden)

    def forward(self, ids):
        x = self.norm(self.tok(ids) + self.pos)
        for layer in self.layers:
            x = layer(x)
        return torch.tanh(self.pool(x[:, 0]))


class TinyRnn(nn.Module):
    """A two-layer LSTM and a bidirectional GRU over a sequence, then a linear layer on
    the last step: the recurrent layers as PyTorch exports them (ONNX LSTM and GRU)."""

    def __init__(self, features=8, hidden=16):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=2, batch_first=True)
        self.gru = nn.GRU(hidden, hidden // 2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(hidden, 4)

    def forward(self, x):
        y, _ = self.lstm(x)
        y, _ = self.gru(y)
        return self.head(y[:, -1])


def randomize_batch_norms(model):
    # Fresh batch norms are the identity; give them statistics so folding is tested.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.1, 0.1)


def randomize_zero_weights(model):
    # A layer initialized to zero (ViT's classifier head) would make the output zero
    # whatever the network before it computes, and a comparison with it check nothing.
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)) and not m.weight.data.any():
            m.weight.data.normal_(0.0, 0.02)


def build(name):
    if name == "resnet18":
        m = torchvision.models.resnet18(weights=None)
        return m, torch.randn(1, 3, 224, 224), 13
    if name.startswith("resnet18@"):
        # The same network on a smaller square image (its global pooling takes any size).
        size = int(name.split("@")[1])
        return torchvision.models.resnet18(weights=None), torch.randn(1, 3, size, size), 13
    if name == "mobilenet_v2":
        m = torchvision.models.mobilenet_v2(weights=None)
        return m, torch.randn(1, 3, 224, 224), 13
    # The rest of the zoo that the frontend covers (tests/e2e runs them too).
    zoo = {"vgg11": torchvision.models.vgg11, "squeezenet1_1": torchvision.models.squeezenet1_1,
           "shufflenet_v2_x0_5": torchvision.models.shufflenet_v2_x0_5, "densenet121": torchvision.models.densenet121,
           "googlenet": lambda weights: torchvision.models.googlenet(weights=weights, aux_logits=False, init_weights=True),
           "efficientnet_b0": torchvision.models.efficientnet_b0, "convnext_tiny": torchvision.models.convnext_tiny,
           "regnet_y_400mf": torchvision.models.regnet_y_400mf}
    if name in zoo:
        return zoo[name](weights=None), torch.randn(1, 3, 224, 224), 13
    if name.startswith("tv."):
        # Any torchvision classification or video model by its name, on a SIZE x SIZE
        # image (224 by default) or a clip of 16 such frames (112 by default).
        arch, _, size = name[len("tv."):].partition("@")
        video = arch in torchvision.models.list_models(module=torchvision.models.video)
        if arch not in torchvision.models.list_models(module=torchvision.models) and not video:
            raise SystemExit(f"{name}: torchvision has no classification or video model {arch}")
        side = int(size) if size else 112 if video else 224
        x = torch.randn(1, 3, 16, side, side) if video else torch.randn(1, 3, side, side)
        return torchvision.models.get_model(arch, weights=None), x, 13
    if name == "bert_tiny":
        return TinyBert(), torch.randint(0, 1000, (1, 32)), 17
    if name == "bert_base":
        # BERT-base's encoder (12 layers, hidden 768, 12 heads, feed-forward 3072) on 128
        # tokens; a 1000-word vocabulary keeps the file small (the embedding is a gather).
        return TinyBert(seq=128, hidden=768, heads=12, ffn=3072, layers=12), torch.randint(0, 1000, (1, 128)), 17
    if name == "rnn_tiny":
        return TinyRnn(), torch.randn(1, 12, 8), 14
    raise SystemExit(f"unknown model {name}")


def export(name, outdir):
    torch.manual_seed(0)
    model, x, opset = build(name)
    randomize_batch_norms(model)
    randomize_zero_weights(model)
    model.eval()
    with torch.no_grad():
        y = model(x)
    name = name.replace("@", "_")
    path = os.path.join(outdir, name + ".onnx")
    torch.onnx.export(model, x, path, opset_version=opset, input_names=["input"], output_names=["output"],
                      do_constant_folding=True)
    np.save(os.path.join(outdir, name + ".input.npy"), x.numpy())
    np.save(os.path.join(outdir, name + ".output.npy"), y.numpy().astype(np.float32))
    print(f"{name}: {path} (opset {opset}), output {tuple(y.shape)}")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    for name in sys.argv[2:] or ["resnet18", "mobilenet_v2", "bert_tiny"]:
        export(name, outdir)


if __name__ == "__main__":
    main()
