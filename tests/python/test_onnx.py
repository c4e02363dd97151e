# TVM's first program in Kiln's Python: an ONNX model imported (kiln.frontend.from_onnx,
# as relay.frontend.from_onnx), compiled for the CPU and for the accelerator
# (kiln.build_model, as relay.build), run with NumPy arrays and saved to a .kiln file.
# The digits CNN (examples/models/digits.py, trained on scikit-learn's handwritten
# digits; the kiln_digits fixture makes it) quantized by `kiln quantize`.
import io
import os
import pathlib
import subprocess

import numpy
import pytest
import torch

import kiln

DIGITS = pathlib.Path(os.environ["KILN_BINARY_DIR"]) / "tests" / "quant" / "digits"


@pytest.fixture(scope="module")
def quantized(tmp_path_factory):
    q = tmp_path_factory.mktemp("digits") / "digits.q.onnx"
    subprocess.run([os.environ["KILN_BIN"], "quantize", str(DIGITS / "digits.onnx"), "--calibrate",
                    str(DIGITS / "calibration"), "--scales", "power2", "-o", str(q)], check=True)
    return q


def test_an_int8_model_on_the_cpu_and_on_the_accelerator_gives_the_same_logits(quantized):
    x = numpy.load(DIGITS / "digits_test_x.npy")[:16].astype("float32")
    y = numpy.load(DIGITS / "digits_test_y.npy")[:16]
    graph = kiln.frontend.from_onnx(str(quantized), shape={"x": x.shape})
    on_cpu = kiln.build_model(graph, target="cpu")
    on_vta = kiln.build_model(graph, target="vta -config=default -device=fsim")
    assert on_vta.accelerator.startswith("vta"), on_vta.accelerator
    cpu_logits = on_cpu(x).numpy()
    vta_logits = on_vta(x).numpy()
    numpy.testing.assert_array_equal(cpu_logits, vta_logits)  # bit for bit
    accuracy = (cpu_logits.argmax(axis=1) == y).mean()
    assert accuracy >= 0.8, accuracy  # a trained model, not noise


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
        return torch.softmax(self.fc(x.flatten(1)), dim=1)


def exported_small(batch):
    """Small with random weights, an input of `batch` images, and its ONNX export."""
    torch.manual_seed(0)
    model = Small().eval()
    x = torch.rand(batch, 3, 8, 8)
    buf = io.BytesIO()
    torch.onnx.export(model, x, buf, opset_version=13, input_names=["data"], output_names=["prob"])
    return model, x, buf.getvalue()


def test_a_pytorch_export_runs_on_the_cpu_saves_and_loads(tmp_path):
    model, x, onnx_bytes = exported_small(2)
    graph = kiln.frontend.from_onnx(onnx_bytes, shape={"data": (2, 3, 8, 8)})
    module = kiln.build_model(graph, target="cpu")
    assert module.input_names == ["data"]
    want = model(x).detach().numpy()
    numpy.testing.assert_allclose(module(x.numpy()).numpy(), want, rtol=1e-5, atol=1e-6)

    # TVM's graph_executor calls
    module.set_input("data", x.numpy())
    module.run()
    numpy.testing.assert_allclose(module.get_output(0).numpy(), want, rtol=1e-5, atol=1e-6)

    path = tmp_path / "small.kiln"
    module.save(str(path))
    loaded = kiln.load_module(str(path))
    numpy.testing.assert_allclose(loaded(x.numpy()).numpy(), want, rtol=1e-5, atol=1e-6)


def test_a_model_with_external_data_imports_from_its_path(tmp_path):
    import onnx
    model, x, onnx_bytes = exported_small(1)
    onnx.save_model(onnx.load_from_string(onnx_bytes), str(tmp_path / "small.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="small.weights", size_threshold=0)
    assert (tmp_path / "small.weights").stat().st_size > 0
    module = kiln.build_model(kiln.frontend.from_onnx(str(tmp_path / "small.onnx")), target="cpu")
    numpy.testing.assert_allclose(module(x.numpy()).numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    # As bytes the model has no folder to read its weights from.
    with pytest.raises(kiln.CompileError, match="give the model as a file path"):
        kiln.frontend.from_onnx((tmp_path / "small.onnx").read_bytes())


def test_model_errors_arrive_with_the_cpp_message(tmp_path):
    with pytest.raises(kiln.CompileError):
        kiln.frontend.from_onnx(b"not a model")
    bad = tmp_path / "missing.onnx"
    with pytest.raises(kiln.KilnError, match="missing.onnx"):
        kiln.frontend.from_onnx(str(bad))
    torch.manual_seed(0)
    buf = io.BytesIO()
    torch.onnx.export(Small().eval(), torch.rand(1, 3, 8, 8), buf, opset_version=13, input_names=["data"])
    module = kiln.build_model(kiln.frontend.from_onnx(buf.getvalue()), target="cpu")
    with pytest.raises(kiln.CompileError, match="float32\\[1, 3, 8, 8\\]"):
        module(numpy.zeros((1, 3, 4, 4), "float32"))
    with pytest.raises(kiln.CompileError, match="no input 'x'"):
        module.set_input("x", numpy.zeros((1, 3, 8, 8), "float32"))
    with pytest.raises(kiln.KilnError):
        kiln.build_model(kiln.frontend.from_onnx(buf.getvalue()), target="no-such-target")


# TVM's first program builds its model for the host and for a cross target: the cross
# module's kernels come back as an aarch64 object file, and it refuses to run here.
def test_a_model_builds_for_the_host_and_as_an_aarch64_object(tmp_path):
    model, x, onnx_bytes = exported_small(1)
    graph = kiln.frontend.from_onnx(onnx_bytes)

    host = kiln.build_model(graph, target="cpu")
    numpy.testing.assert_allclose(host(x.numpy()).numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    host.export_object(str(tmp_path / "small_host.o"))
    readelf = subprocess.run(["llvm-readelf-19", "-h", str(tmp_path / "small_host.o")], capture_output=True,
                             text=True, check=True).stdout
    assert "X86-64" in readelf, readelf

    arm = kiln.build_model(graph, target="llvm -mtriple=aarch64-linux-gnu")
    assert arm.target == "llvm -mtriple=aarch64-linux-gnu"
    assert arm.kernel_names == host.kernel_names and arm.num_kernels >= 2
    path = tmp_path / "small_aarch64.o"
    arm.export_object(str(path))
    dump = subprocess.run(["llvm-objdump-19", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    assert "file format elf64-littleaarch64" in dump
    for name in arm.kernel_names:  # every kernel of the model, with its packed entry
        assert f"<{name}>:" in dump and f"<{name}_packed>:" in dump, name
    assert "aarch64" in arm.get_source("ll")

    with pytest.raises(kiln.RuntimeError, match="compiled for aarch64.*another machine.*export_object"):
        arm(x.numpy())
    with pytest.raises(kiln.RuntimeError, match="export_object"):
        arm.export_library(str(tmp_path / "libsmall.so"))
