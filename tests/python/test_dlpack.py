# Arrays cross between Kiln, NumPy and PyTorch through DLPack without copies.
import numpy
import pytest

import kiln
from kiln import te


def test_numpy_to_kiln_shares_storage():
    x = numpy.arange(12, dtype="float32").reshape(3, 4)
    a = kiln.nd.from_dlpack(x)
    assert a.shape == (3, 4) and a.dtype == "float32"
    view = a.numpy()
    view[1, 2] = 42.0
    assert x[1, 2] == 42.0  # the same bytes


def test_kiln_to_numpy_shares_storage_and_outlives_the_kiln_handle():
    a = kiln.nd.zeros((5,), "int32")
    v = numpy.from_dlpack(a)  # read-only in NumPy 1.24 (Debian 12)
    w = a.numpy()             # kiln's own view is writable
    del a
    w[:] = 7  # still valid: each export keeps the storage alive
    assert v.tolist() == [7] * 5


def test_nd_array_copies_into_kiln_storage():
    x = numpy.ones((2, 2), "float32")
    a = kiln.nd.array(x)
    x[0, 0] = 5
    assert a.numpy()[0, 0] == 1


def test_torch_tensors_go_in_and_out():
    import torch
    import torch.utils.dlpack
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: A[i] * 3.0, name="B")
    f = kiln.build(te.create_schedule(B.op), [A, B])
    a = torch.arange(6, dtype=torch.float32)
    b = torch.zeros(6, dtype=torch.float32)
    f(a, b)  # PyTorch's storage, written in place
    assert b.tolist() == [0.0, 3.0, 6.0, 9.0, 12.0, 15.0]
    k = kiln.nd.zeros((3,), "float32")
    t = torch.utils.dlpack.from_dlpack(k)
    t += 2
    assert k.numpy().tolist() == [2.0, 2.0, 2.0]


def test_a_non_contiguous_array_is_refused_with_a_message():
    A = te.placeholder((4, 4), name="A")
    B = te.compute((4, 4), lambda i, j: A[i, j], name="B")
    f = kiln.build(te.create_schedule(B.op), [A, B])
    x = numpy.zeros((4, 8), "float32")[:, ::2]
    with pytest.raises(kiln.KilnError):
        f(x, numpy.zeros((4, 4), "float32"))
