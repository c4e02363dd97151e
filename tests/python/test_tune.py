# TVM's introduction, "Tuning a convolution with a template" (AutoTVM): a conv2d
# template with define_split and define_knob, tuned by the XGBoost tuner for 32 trials
# with its records logged to a file, then the best record applied and the result
# checked against PyTorch. `tvm` is replaced by `kiln`; the template schedules for the
# CPU (Kiln's Python templates are measured there) instead of binding GPU threads.
import json
import subprocess
import sys
import textwrap

import numpy
import pytest
import torch

import kiln
from kiln import autotvm, te, topi

N, H, W, CO, CI, KH, KW = 1, 14, 14, 64, 32, 3, 3
strides, padding = (1, 1), (1, 1)


@autotvm.template("tutorial/conv2d_no_batching")
def conv2d_no_batching(N, H, W, CO, CI, KH, KW, stride, padding):
    assert N == 1, "only batch 1"
    data = te.placeholder((N, CI, H, W), name="data")
    kernel = te.placeholder((CO, CI, KH, KW), name="kernel")
    conv = topi.conv2d_nchw(data, kernel, stride, padding, dilation=(1, 1))
    s = te.create_schedule([conv.op])

    # the padded input is computed where it is read
    data_pad = conv.op.input_tensors[0]
    s[data_pad].compute_inline()

    n, f, y, x = s[conv].op.axis
    rc, ry, rx = s[conv].op.reduce_axis
    cfg = autotvm.get_config()
    cfg.define_split("tile_f", f, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    cfg.define_split("tile_rc", rc, num_outputs=2)
    cfg.define_knob("unroll_rx", [0, 1])
    cfg.define_knob("parallel", [0, 1])

    fo, fi = cfg["tile_f"].apply(s, conv, f)
    xo, xi = cfg["tile_x"].apply(s, conv, x)
    rco, rci = cfg["tile_rc"].apply(s, conv, rc)
    s[conv].reorder(n, fo, y, xo, rco, ry, rx, rci, fi, xi)
    if cfg["unroll_rx"].val:
        s[conv].unroll(rx)
    if cfg["parallel"].val:
        s[conv].parallel(fo)
    return s, [data, kernel, conv]


def reference(a, w):
    return torch.nn.functional.conv2d(torch.from_numpy(a), torch.from_numpy(w), stride=strides,
                                      padding=padding).numpy()


def test_a_conv2d_template_tuned_by_xgboost_for_32_trials_and_its_best_record_applied(tmp_path, capsys):
    log_file = str(tmp_path / "conv2d.log")
    task = autotvm.task.create("tutorial/conv2d_no_batching",
                               args=(N, H, W, CO, CI, KH, KW, strides, padding), target="llvm")
    print(task.config_space)
    # 64 = 2^6 output channels, 14 columns, 32 = 2^5 input channels: 7 * 4 * 6 splits, 2 * 2 knobs
    assert task.config_space.size == 7 * 4 * 6 * 2 * 2
    assert [k[0] for k in task.config_space.knobs] == ["tile_f", "tile_x", "tile_rc", "unroll_rx", "parallel"]
    assert task.flop == 2 * N * CO * H * W * CI * KH * KW  # counted from the loops, a multiply-add is 2

    measure_option = autotvm.measure_option(builder=autotvm.LocalBuilder(),
                                            runner=autotvm.LocalRunner(repeat=3, min_repeat_ms=5, timeout=10))
    tuner = autotvm.tuner.XGBTuner(task)
    tuner.tune(n_trial=32, measure_option=measure_option,
               callbacks=[autotvm.callback.progress_bar(32), autotvm.callback.log_to_file(log_file)])
    assert "32/32" in capsys.readouterr().out  # the progress bar reached the end

    lines = [json.loads(line) for line in open(log_file)]
    assert len(lines) == 32
    assert len({r["config"] for r in lines}) == 32  # no configuration measured twice
    assert all(r["template"] == "tutorial/conv2d_no_batching" for r in lines)
    assert all(r["workload"] == f"tutorial/conv2d_no_batching:{(N, H, W, CO, CI, KH, KW, strides, padding)}"
               for r in lines)
    ok = [r for r in lines if not r.get("error")]
    assert len(ok) >= 30, [r.get("error") for r in lines]
    best = min(ok, key=lambda r: r["cost"])
    assert tuner.result.best.config == best["config"]
    assert tuner.best_flops == pytest.approx(task.flop / best["cost"])

    # the best record, applied
    with autotvm.apply_history_best(log_file) as history:
        assert history.query("tutorial/conv2d_no_batching", (N, H, W, CO, CI, KH, KW, strides, padding)).config \
            == best["config"]
        s, arg_bufs = conv2d_no_batching(N, H, W, CO, CI, KH, KW, strides, padding)
        func = kiln.build(s, arg_bufs, target="llvm")
    applied = str(kiln.lower(s, arg_bufs))
    assert ("parallel for" in applied) == (best["knobs"]["parallel"] == "1"), applied

    rng = numpy.random.default_rng(0)
    a = rng.uniform(-1, 1, (N, CI, H, W)).astype("float32")
    w = rng.uniform(-1, 1, (CO, CI, KH, KW)).astype("float32")
    c = numpy.zeros((N, CO, H, W), dtype="float32")
    func(a, w, c)
    numpy.testing.assert_allclose(c, reference(a, w), rtol=1e-4, atol=1e-4)

    # the untuned (fallback) schedule gives the same numbers
    s, arg_bufs = conv2d_no_batching(N, H, W, CO, CI, KH, KW, strides, padding)
    assert (str(kiln.lower(s, arg_bufs)) == applied) == (best["config"] == 0)
    c0 = numpy.zeros_like(c)
    kiln.build(s, arg_bufs, target="llvm")(a, w, c0)
    numpy.testing.assert_allclose(c0, c, rtol=1e-4, atol=1e-4)


@autotvm.template("test/matmul")
def matmul(n, dtype):
    A = te.placeholder((n, n), name="A", dtype=dtype)
    B = te.placeholder((n, n), name="B", dtype=dtype)
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2, policy="power2", max_factor=16)
    cfg.define_reorder("order", [y, x], policy="all")
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, k, yi, xi)
    return s, [A, B, C]


def test_every_search_policy_and_early_stopping(tmp_path):
    task = autotvm.task.create("test/matmul", args=(32, "float32"), target="llvm")
    assert task.flop == 2 * 32 ** 3
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(n_parallel=2),
                                    runner=autotvm.LocalRunner(repeat=1, min_repeat_ms=1))
    for cls in (autotvm.tuner.RandomTuner, autotvm.tuner.GridSearchTuner, autotvm.tuner.XGBTuner):
        log = tmp_path / f"{cls.__name__}.log"
        res = cls(task).tune(n_trial=6, measure_option=option, callbacks=[autotvm.callback.log_to_file(log)])
        assert res.measured == 6 and res.errors == 0, cls
        assert len(open(log).readlines()) == 6
        assert {r.tuner for r in res.records} == {cls.policy}
    # grid search in index order: the first configurations of the space
    grid = autotvm.load_records(str(tmp_path / "GridSearchTuner.log"))
    assert [r.config for r in grid] == list(range(6))
    # a path with no file: no records to resume from, but records to apply must exist
    assert autotvm.load_records(str(tmp_path / "none.log")) == []
    with pytest.raises(kiln.KilnError, match="none.log: no such records file"):
        autotvm.load_records(str(tmp_path / "none.log"), missing_ok=False)
    with pytest.raises(kiln.KilnError, match="none.log: no such records file"):
        autotvm.apply_history_best(str(tmp_path / "none.log"))
    # early stopping: stops once that many trials in a row found nothing better
    res = autotvm.tuner.RandomTuner(task).tune(n_trial=task.config_space.size, measure_option=option,
                                               early_stopping=3)
    assert res.stopped_early and res.measured < task.config_space.size


def test_template_errors_arrive_with_their_message(tmp_path):
    with pytest.raises(kiln.KilnError, match="no Python template 'nope'"):
        autotvm.task.create("nope", args=(1,))
    with pytest.raises(kiln.KilnError, match="measured on the CPU"):
        autotvm.task.create("test/matmul", args=(32, "float32"), target="vta")
    with pytest.raises(kiln.KilnError, match="not Python literals"):
        autotvm.task.create("test/matmul", args=(32, object()))
    with pytest.raises(kiln.KilnError, match="only inside"):
        autotvm.get_config()

    @autotvm.template("test/bad_split")
    def bad_split(n):
        A = te.placeholder((n,), name="A")
        B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
        s = te.create_schedule(B.op)
        autotvm.get_config().define_split("tile", B.op.axis[0], policy="golden")
        return s, [A, B]

    with pytest.raises(kiln.KilnError, match="policy 'golden'"):
        autotvm.task.create("test/bad_split", args=(8,))
    with pytest.raises(kiln.KilnError, match="defined twice"):
        autotvm.template("test/bad_split")(bad_split)
    with pytest.raises(kiln.KilnError, match="unknown tuner|no tuner|tuner 'annealing'"):
        class Annealing(autotvm.tuner.Tuner):
            policy = "annealing"
        Annealing(autotvm.task.create("test/matmul", args=(32, "float32"))).tune(n_trial=2)


def test_a_candidate_that_fails_is_a_recorded_error_and_tuning_goes_on(tmp_path):
    @autotvm.template("test/fails_sometimes")
    def fails_sometimes(n):
        A = te.placeholder((n,), name="A")
        B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
        s = te.create_schedule(B.op)
        cfg = autotvm.get_config()
        cfg.define_knob("fail", [False, True])
        if cfg["fail"].val:
            raise ValueError("this candidate cannot be scheduled")
        return s, [A, B]

    task = autotvm.task.create("test/fails_sometimes", args=(64,))
    res = autotvm.tuner.GridSearchTuner(task).tune(n_trial=2, measure_option=autotvm.measure_option(
        runner=autotvm.LocalRunner(repeat=1, min_repeat_ms=1)))
    assert res.measured == 2 and res.errors == 1
    failed = [r for r in res.records if not r.ok][0]
    assert "cannot be scheduled" in failed.error, failed.error


MPI_SCRIPT = textwrap.dedent("""
    import sys
    import kiln
    from kiln import autotvm, te

    @autotvm.template("test/mpi_add")
    def add(n):
        A = te.placeholder((n,), name="A")
        B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
        s = te.create_schedule(B.op)
        cfg = autotvm.get_config()
        cfg.define_split("tile", B.op.axis[0], num_outputs=2)
        cfg["tile"].apply(s, B, B.op.axis[0])
        return s, [A, B]

    session = autotvm.mpi_session()
    option = {"timeout": 20, "repeat": 1, "min_repeat_ms": 1}
    if session.rank > 0:
        session.serve(option)
    else:
        task = autotvm.task.create("test/mpi_add", args=(256,))
        res = autotvm.tuner.RandomTuner(task).tune(n_trial=6, measure_option=autotvm.measure_option(
            runner=autotvm.MpiRunner(session, repeat=1, min_repeat_ms=1)),
            callbacks=[autotvm.callback.log_to_file(sys.argv[1])])
        session.stop_workers()
        print("measured", res.measured, "errors", res.errors, "ranks", session.size)
""")


def test_measurements_spread_over_mpi_ranks(tmp_path):
    script = tmp_path / "tune_mpi.py"
    script.write_text(MPI_SCRIPT)
    log = tmp_path / "mpi.log"
    out = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "3", sys.executable, str(script),
                          str(log)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "measured 6 errors 0 ranks 3" in out.stdout, out.stdout + out.stderr
    assert len(autotvm.load_records(str(log))) == 6
