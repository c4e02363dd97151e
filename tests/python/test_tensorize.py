# Tensor intrinsics and virtual threads from Python: an intrinsic declared as TVM's
# te.decl_tensor_intrin does (a pattern over placeholders, an implementation over the
# regions it is given), tensorize and bind(axis, thread_axis("vthread")); the lowered
# loop IR shows them, the CPU backend runs them against NumPy, and illegal requests
# arrive as kiln.CompileError with the C++ message (compiler/schedule/tensorize.cc).
import numpy
import pytest

import kiln
from kiln import te, tir, topi


def gemm_intrin(n=4, transposed_b=False):
    """An n x n x n int32 GEMM "instruction" written as loops over its regions, marked
    with a pragma so that the lowered IR shows where it went."""
    a = te.placeholder((n, n), "int32", name="a")
    b = te.placeholder((n, n), "int32", name="b")
    k = te.reduce_axis((0, n), "k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * (b[j, k] if transposed_b else b[k, j]), axis=k), name="c")

    def intrin_func(ins, outs):
        aa, bb = ins
        (cc,) = outs
        i, j, kk = te.var("gi"), te.var("gj"), te.var("gk")

        def loops(body):
            return tir.For(i, 0, n, "serial", tir.For(j, 0, n, "vectorized", body))

        init = loops(cc.vstore((i, j), 0))
        update = loops(tir.For(kk, 0, n, "serial", cc.vstore((i, j), cc[i, j] + aa[i, kk] * bb[kk, j])))

        def mark(s):
            return tir.AttrStmt(None, "pragma_gemm_intrin", 1, s)

        return mark(tir.SeqStmt([init, update])), mark(init), mark(update)

    return te.decl_tensor_intrin(c.op, intrin_func, name=f"gemm{n}")


def matmul(n=16, k=16):
    A = te.placeholder((n, k), "int32", name="A")
    B = te.placeholder((k, n), "int32", name="B")
    return A, B, topi.matmul(A, B, name="C")


def run(s, args, shapes):
    rng = numpy.random.default_rng(0)
    a = rng.integers(-8, 8, shapes[0]).astype("int32")
    b = rng.integers(-8, 8, shapes[1]).astype("int32")
    c = numpy.zeros((shapes[0][0], shapes[1][1]), "int32")
    kiln.build(s, args, target="llvm", name="f")(a, b, c)
    return a, b, c


def test_a_python_gemm_intrinsic_tensorizes_a_matmul_with_the_reduction_split():
    A, B, C = matmul()
    intrin = gemm_intrin()
    assert intrin.name == "gemm4" and repr(intrin) == "TensorIntrin(gemm4)"
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 4)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    s[C].reorder(xo, yo, ko, xi, yi, ki)
    s[C].tensorize(xi, intrin)
    text = str(kiln.lower(s, [A, B, C], simple_mode=True))
    assert "pragma_gemm_intrin" in text, text
    assert "if (k.outer == 0)" in text, text  # reduce_init once, then reduce_update
    assert "for (i.inner" not in text, text  # the tensorized loops are gone
    a, b, c = run(s, [A, B, C], [(16, 16), (16, 16)])
    numpy.testing.assert_array_equal(c, a @ b)


def test_a_python_intrinsic_over_the_whole_reduction_runs_in_parallel_blocks():
    A, B, C = matmul(16, 4)
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 4)
    s[C].tensorize(xi, gemm_intrin())
    s[C].parallel(xo)
    text = str(kiln.lower(s, [A, B, C]))
    assert "pragma_gemm_intrin" in text and "for (k," not in text, text
    a, b, c = run(s, [A, B, C], [(16, 4), (4, 16)])
    numpy.testing.assert_array_equal(c, a @ b)


def test_an_elementwise_vector_intrinsic():
    x = te.placeholder((8,), name="x")
    y = te.placeholder((8,), name="y")
    z = te.compute((8,), lambda i: x[i] + y[i], name="z")

    def vadd(ins, outs):
        i = te.var("vi")
        return tir.For(i, 0, 8, "vectorized", outs[0].vstore(i, ins[0][i] + ins[1].vload(i)))

    intrin = te.decl_tensor_intrin(z.op, vadd)
    assert intrin.name == "z"
    A = te.placeholder((6, 16), name="A")
    B = te.placeholder((6, 16), name="B")
    C = topi.add(A, B)
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].tensorize(ji, intrin)
    assert "ramp(" in str(kiln.lower(s, [A, B, C])), str(kiln.lower(s, [A, B, C]))
    a = numpy.random.rand(6, 16).astype("float32")
    b = numpy.random.rand(6, 16).astype("float32")
    c = numpy.zeros((6, 16), "float32")
    kiln.build(s, [A, B, C], target="llvm")(a, b, c)
    numpy.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_virtual_threads_interleave_and_give_each_thread_its_buffers():
    A, B, C = matmul()
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    io, ii = s[C].split(C.op.axis[0], factor=8)
    tx, iii = s[C].split(ii, factor=4)
    vx = te.thread_axis("vthread")
    assert vx.var.name == "vthread"
    s[C].bind(tx, vx)
    s[CL].compute_at(s[C], tx)
    s[C].parallel(io)
    text = str(kiln.lower(s, [A, B, C]))
    assert "vthread" not in text, text  # the threads are interleaved away
    assert "allocate C.local: int32[128]" in text, text  # two threads, 64 elements each
    a, b, c = run(s, [A, B, C], [(16, 16), (16, 16)])
    numpy.testing.assert_array_equal(c, a @ b)
    # TVM's other spelling: a domain and a tag
    s2 = te.create_schedule(C.op)
    o, i = s2[C].split(C.op.axis[0], nparts=2)
    s2[C].bind(o, te.thread_axis((0, 2), "vthread", name="vx"))
    a, b, c = run(s2, [A, B, C], [(16, 16), (16, 16)])
    numpy.testing.assert_array_equal(c, a @ b)


def test_illegal_tensorize_and_bind_requests_raise_the_cpp_message():
    A, B, C = matmul(16, 4)
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 4)
    s[C].tensorize(xi, gemm_intrin(transposed_b=True))
    with pytest.raises(kiln.CompileError,
                       match="tensorize of stage 'C' at axis 'i.inner' with intrinsic 'gemm4'.*does not move with"):
        kiln.lower(s, [A, B, C])
    with pytest.raises(kiln.CompileError, match="tensorize of stage 'C'.*with intrinsic 'gemm4'"):
        kiln.build(s, [A, B, C], target="llvm")  # lowering inside build, without the GIL

    A, B, C = matmul()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 4)
    s[C].tensorize(xi, gemm_intrin())
    with pytest.raises(kiln.CompileError, match="axis 'i' covers 8 values inside the tensorized loops"):
        kiln.lower(s, [A, B, C])

    # a split reduction needs (body, reduce_init, reduce_update)
    a = te.placeholder((4, 4), "int32", name="a")
    b = te.placeholder((4, 4), "int32", name="b")
    k = te.reduce_axis((0, 4), "k")
    c = te.compute((4, 4), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="c")
    body_only = te.decl_tensor_intrin(c.op, lambda ins, outs: tir.NoOp(), name="body_only")
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 4)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    s[C].reorder(xo, yo, ko, xi, yi, ki)
    s[C].tensorize(xi, body_only)
    with pytest.raises(kiln.CompileError, match="reduction axis 'k.outer' is outside the tensorized loops"):
        kiln.lower(s, [A, B, C])

    with pytest.raises(kiln.CompileError, match="the pattern must be a compute"):
        te.decl_tensor_intrin(a, lambda ins, outs: tir.NoOp())
    A, B, C = matmul(16, 4)  # the whole reduction inside the block
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 4)
    s[C].tensorize(xi, te.decl_tensor_intrin(c.op, lambda ins, outs: 42, name="wrong"))
    with pytest.raises(kiln.CompileError, match="returns a kiln.tir.Stmt or \\(body, reduce_init, reduce_update\\)"):
        kiln.lower(s, [A, B, C])

    def raises(ins, outs):
        raise ZeroDivisionError("from the implementation")
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 4)
    s[C].tensorize(xi, te.decl_tensor_intrin(c.op, raises))
    with pytest.raises(ZeroDivisionError, match="from the implementation"):
        kiln.build(s, [A, B, C], target="llvm")

    s = te.create_schedule(C.op)
    with pytest.raises(kiln.CompileError, match="unknown thread axis 'warp'"):
        s[C].bind(C.op.axis[0], te.thread_axis("warp"))
    with pytest.raises(kiln.CompileError, match="a reduction axis cannot be bound"):
        s[C].bind(C.op.reduce_axis[0], te.thread_axis("vthread"))
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    with pytest.raises(kiln.CompileError, match="stage 'C': tensorize of axis 'i': the axis was already split"):
        s[C].tensorize(C.op.axis[0], gemm_intrin())
    with pytest.raises(kiln.CompileError, match="loop kind 'sideways'"):
        tir.For(te.var("i"), 0, 4, "sideways", tir.NoOp())
