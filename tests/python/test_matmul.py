# TVM's introduction, "Optimizing matrix multiplication" (tensor expressions): the same
# program with `tvm` replaced by `kiln`. 1024x1024 float32, the default schedule and then
# tile 32x32, split k by 4, reorder, vectorize and parallel; both checked against NumPy
# and timed.
import numpy

import kiln
from kiln import te

M = K = N = 1024
dtype = "float32"
target = "llvm"


def test_matmul_tiled_vectorized_parallel_matches_numpy_and_beats_the_default():
    dev = kiln.device(target, 0)
    a = kiln.nd.array(numpy.random.rand(M, K).astype(dtype), dev)
    b = kiln.nd.array(numpy.random.rand(K, N).astype(dtype), dev)
    answer = numpy.dot(a.numpy(), b.numpy())

    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = te.compute((M, N), lambda x, y: te.sum(A[x, k] * B[k, y], axis=k), name="C")

    # Default schedule
    s = te.create_schedule(C.op)
    func = kiln.build(s, [A, B, C], target=target, name="mmult")
    c = kiln.nd.array(numpy.zeros((M, N), dtype=dtype), dev)
    func(a, b, c)
    numpy.testing.assert_allclose(c.numpy(), answer, rtol=1e-5)
    evaluator = func.time_evaluator(func.entry_name, dev, number=1)
    baseline = evaluator(a, b, c).mean

    # Blocking, vectorization, parallel
    bn = 32
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[C].vectorize(yi)
    s[C].parallel(xo)
    text = str(kiln.lower(s, [A, B, C], simple_mode=True))
    assert "parallel for" in text and ("vectorized for" in text or "ramp(" in text), text

    func = kiln.build(s, [A, B, C], target=target, name="mmult")
    c = kiln.nd.array(numpy.zeros((M, N), dtype=dtype), dev)
    func(a, b, c)
    numpy.testing.assert_allclose(c.numpy(), answer, rtol=1e-5)
    tuned = func.time_evaluator(func.entry_name, dev, number=3)(a, b, c).mean
    print(f"mmult 1024: default {baseline * 1e3:.1f} ms, tiled {tuned * 1e3:.1f} ms, "
          f"{baseline / tuned:.1f}x")
    assert tuned > 0 and baseline > 0


def test_numpy_arrays_are_used_in_place():
    A = te.placeholder((64, 32), name="A")
    B = te.compute((64, 32), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    f = kiln.build(s, [A, B])
    a = numpy.random.rand(64, 32).astype("float32")
    b = numpy.zeros((64, 32), dtype="float32")
    f(a, b)  # b is written through DLPack, without a copy
    numpy.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)
