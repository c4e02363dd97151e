#!/usr/bin/python3
"""A small CNN trained on scikit-learn's handwritten digits (load_digits: 1797 real 8x8
images, 10 classes), for measuring quantization quality on real data.

    /usr/bin/python3 examples/models/digits.py OUT_DIR

writes OUT_DIR/digits.onnx (opset 13, input "x" [batch, 1, 8, 8] float32 in [0, 1]),
OUT_DIR/digits_test_x.npy, OUT_DIR/digits_test_y.npy (int64 labels) for the held-out
split, OUT_DIR/calibration/digits_calib.npy (256 training images), and prints the fp32
test accuracy. The split (30% test, stratified) and the seed are fixed.
"""
import os
import sys

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 0


class DigitsNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.conv3 = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.conv4 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        a = torch.relu(self.conv1(x))
        b = torch.relu(self.conv2(a))
        c = torch.relu(self.conv3(b) + a)  # a residual add
        d = torch.relu(self.conv4(self.pool(c)))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(d, 1), 1))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "digits"
    os.makedirs(os.path.join(out, "calibration"), exist_ok=True)
    torch.manual_seed(SEED)
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.3, random_state=SEED, stratify=y)
    model = DigitsNet()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = torch.from_numpy(x_train), torch.from_numpy(y_train)
    rng = np.random.default_rng(SEED)
    for _ in range(40):
        perm = torch.from_numpy(rng.permutation(len(xt)))
        for i in range(0, len(xt), 64):
            idx = perm[i:i + 64]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        acc = (model(torch.from_numpy(x_test)).argmax(1).numpy() == y_test).mean()
    torch.onnx.export(model, torch.zeros(1, 1, 8, 8), os.path.join(out, "digits.onnx"), opset_version=13,
                      input_names=["x"], output_names=["logits"], dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
    np.save(os.path.join(out, "digits_test_x.npy"), x_test)
    np.save(os.path.join(out, "digits_test_y.npy"), y_test)
    np.save(os.path.join(out, "calibration", "digits_calib.npy"), x_train[:256])
    print(f"digits: {len(x_train)} training and {len(x_test)} test images, fp32 test accuracy {100 * acc:.2f}%")


if __name__ == "__main__":
    main()
