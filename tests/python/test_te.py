# kiln.te and kiln.lower from Python: expressions, schedules, the printed loop IR, and
# C++ errors arriving as Python exceptions with their messages.
import numpy
import pytest

import kiln
from kiln import te, topi


def test_lower_prints_the_loop_ir_with_the_schedule_applied():
    n = 64
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=8)
    s[B].unroll(ii)
    f = kiln.lower(s, [A, B], simple_mode=True)
    text = str(f)
    assert text.startswith("main(A: float32[64, 64], B: float32[64, 64])"), text
    # the unrolled inner loop is 8 copies of the j loop inside the outer one
    assert "for (i.outer, 0, 8)" in text and text.count("for (j, 0, 64)") == 8, text
    assert f.params == ["A", "B"]


def test_expressions_take_python_literals_in_the_other_operands_type():
    x = te.var("x")
    assert (x + 1).dtype == "int32"
    y = te.var("y", "float16")
    assert (y * 2).dtype == "float16"
    assert (1.5 * y).dtype == "float16"
    with pytest.raises(kiln.CompileError, match="float literal"):
        x + 0.5


def test_reductions_and_the_op_library():
    A = te.placeholder((16, 8), name="A")
    k = te.reduce_axis((0, 8), "k")
    R = te.compute((16,), lambda i: te.max(A[i, k], axis=k), name="R")
    W = te.placeholder((4, 8), name="W")
    D = topi.dense(A, W)
    s = te.create_schedule([R, D])
    f = kiln.build(s, [A, W, R, D])
    a = numpy.random.rand(16, 8).astype("float32")
    w = numpy.random.rand(4, 8).astype("float32")
    r = numpy.zeros(16, "float32")
    d = numpy.zeros((16, 4), "float32")
    f(a, w, r, d)
    numpy.testing.assert_allclose(r, a.max(axis=1))
    numpy.testing.assert_allclose(d, a @ w.T, rtol=1e-5)


def test_an_illegal_schedule_raises_compile_error_naming_stage_and_axis():
    A = te.placeholder((32, 32), name="A")
    B = te.compute((32, 32), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    s[B].split(i, factor=4)
    with pytest.raises(kiln.CompileError) as err:
        s[B].split(i, factor=2)  # i is no longer a leaf
    assert "'B'" in str(err.value) and "i" in str(err.value), str(err.value)
    with pytest.raises(kiln.CompileError, match="factor or nparts"):
        s[B].split(j)


def test_bad_arguments_to_a_built_function_raise_runtime_error():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    f = kiln.build(te.create_schedule(B.op), [A, B])
    with pytest.raises(kiln.KilnError):
        f(numpy.zeros(8, "float32"), numpy.zeros(9, "float32"))
    with pytest.raises(kiln.KilnError):
        f(numpy.zeros(8, "float64"), numpy.zeros(8, "float32"))


def test_an_unknown_data_type_is_refused_by_name():
    with pytest.raises(kiln.CompileError, match="float33"):
        te.placeholder((4,), dtype="float33")


def test_a_cross_target_builds_an_aarch64_object(tmp_path):
    A = te.placeholder((256,), name="A")
    B = te.compute((256,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    s[B].vectorize(xi)
    f = kiln.build(s, [A, B], target="llvm -mtriple=aarch64-linux-gnu", name="twice")
    path = tmp_path / "twice.o"
    f.export_object(str(path))
    elf = path.read_bytes()
    assert elf[:4] == b"\x7fELF"
    assert int.from_bytes(elf[18:20], "little") == 183  # EM_AARCH64
    assert "twice" in f.get_source("asm")
