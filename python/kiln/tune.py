"""Tuning from Python (tuner/), as TVM's autotvm (also importable as kiln.autotvm).

A template is a Python function that builds tensor expressions and a schedule whose
choices it asks of a configuration (`get_config()`: define_split, define_knob,
define_reorder). Kiln's C++ tuner searches its space: the search policies (XGBoost cost
model, random, grid), the measurement (a pool of forked workers, each building and
timing one candidate with a timeout; MPI ranks under mpirun), the records (JSON lines,
appended as each candidate finishes) are the C++ core's; this file only gives them
AutoTVM's names.

    @kiln.autotvm.template("tutorial/conv2d")
    def conv2d(N, H, W, CO, CI, KH, KW, stride, padding):
        ...
        cfg = kiln.autotvm.get_config()
        cfg.define_split("tile_f", f, num_outputs=2)
        cfg.define_knob("unroll", [0, 1])
        fo, fi = cfg["tile_f"].apply(s, conv, f)
        ...
        return s, [data, kernel, conv]

    task = kiln.autotvm.task.create("tutorial/conv2d", args=(1, 14, 14, 64, 32, 3, 3, (1, 1), (1, 1)),
                                    target="llvm")
    measure_option = kiln.autotvm.measure_option(builder=kiln.autotvm.LocalBuilder(),
                                                 runner=kiln.autotvm.LocalRunner(repeat=3, min_repeat_ms=10))
    tuner = kiln.autotvm.tuner.XGBTuner(task)
    tuner.tune(n_trial=32, measure_option=measure_option,
               callbacks=[kiln.autotvm.callback.log_to_file("conv2d.log")])
    with kiln.autotvm.apply_history_best("conv2d.log"):
        s, args = conv2d(1, 14, 14, 64, 32, 3, 3, (1, 1), (1, 1))
        func = kiln.build(s, args)

Templates are measured on the CPU ("llvm ..." targets). A template's arguments must be
Python literals (numbers, strings, tuples): they are the workload's key in the records.
"""
import ast
import contextlib
import itertools
import math
import sys
import threading
import types

from . import _kiln
from ._kiln import KilnError
from ._kiln.tune import (ConfigSpace as _CppSpace, Workload, Record, TuneResult, TuneProgress, MpiSession,
                         load_records, best_records, template_names, tuner_names, launched_by_mpirun)

_cpp = _kiln.tune
_templates = {}  # name -> the template's function
_local = threading.local()


def _context_stack():
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


# What a knob's chosen entity is, as AutoTVM names them.
class SplitEntity:
    """Factors of one axis, outermost first; apply() splits the axis into them."""

    def __init__(self, size):
        self.size = list(size)

    def apply(self, sch, op, axis):
        parts = []
        for i in range(1, len(self.size)):
            outer, axis = sch[op].split(axis, factor=math.prod(self.size[i:]))
            parts.append(outer)
        return parts + [axis]

    def __repr__(self):
        return f"SplitEntity({self.size})"


class ReorderEntity:
    """A permutation of axis positions; apply() reorders the axes by it."""

    def __init__(self, perm):
        self.perm = list(perm)

    def apply(self, sch, op, axes):
        ordered = [axes[i] for i in self.perm]
        sch[op].reorder(*ordered)
        return ordered

    def __repr__(self):
        return f"ReorderEntity({self.perm})"


class OtherOptionEntity:
    """One value of a define_knob list."""

    def __init__(self, val):
        self.val = val

    def __repr__(self):
        return f"OtherOptionEntity({self.val!r})"


class _Config:
    """What get_config() returns inside a template: defines knobs and answers cfg[name]."""

    def __init__(self, choices=None, index=-1):
        self._space = _CppSpace()
        self._values = {}          # define_knob: name -> the Python values
        self._choices = choices    # {knob: (factors, name)}; None: the first choice of each knob
        self.index = index
        self.is_fallback = choices is None

    def define_split(self, name, axis, policy="factors", num_outputs=2, max_factor=None, min_factor=1):
        """Splits of `axis` (an IterVar, or its extent) into num_outputs factors."""
        self._space.define_split(name, axis, num_outputs, policy, max_factor or 0, min_factor)

    def define_knob(self, name, candidates):
        """One of `candidates` (any values; each must print differently)."""
        candidates = list(candidates)
        words = [str(c) for c in candidates]
        if len(set(words)) != len(words):
            raise KilnError(f"define_knob '{name}': the candidates {words} do not print differently")
        self._values[name] = candidates
        self._space.define_knob(name, words)

    def define_reorder(self, name, axes, policy="all", candidate=None):
        """Orders of `axes`: every permutation ("all"), the given one ("identity") or those of `candidate`."""
        n = len(axes)
        if policy == "all":
            orders = [list(p) for p in itertools.permutations(range(n))]
        elif policy == "identity":
            orders = [list(range(n))]
        elif policy == "candidate":
            orders = [[axes.index(a) for a in c] for c in candidate]
        else:
            raise KilnError(f"define_reorder '{name}': policy '{policy}' is not one of all, identity, candidate")
        self._space.define_reorder(name, orders)

    def __getitem__(self, name):
        if self._choices is None:
            factors, word = self._space.choices(0)[name]
        elif name in self._choices:
            factors, word = self._choices[name]
        else:
            raise KilnError(f"the configuration has no knob '{name}'")
        kind = {k[0]: k[1] for k in self._space.knobs}.get(name)
        if kind == "split":
            return SplitEntity(factors)
        if kind == "reorder":
            return ReorderEntity(factors)
        if name in self._values:
            return OtherOptionEntity(self._values[name][[str(v) for v in self._values[name]].index(word)])
        raise KilnError(f"knob '{name}' is read before it is defined")

    @property
    def space(self):
        return self._space

    def __repr__(self):
        if self._choices is None:
            return "FallbackConfig"
        return f"Config({self.index}: " + ", ".join(f"{k}={v[1] or list(v[0])}" for k, v in
                                                   sorted(self._choices.items())) + ")"


def get_config():
    """The configuration of the template being called (AutoTVM's autotvm.get_config())."""
    stack = _context_stack()
    if not stack or not isinstance(stack[-1], _Config):
        raise KilnError("get_config() is called only inside a function decorated with kiln.tune.template")
    return stack[-1]


@contextlib.contextmanager
def _using(cfg):
    stack = _context_stack()
    stack.append(cfg)
    try:
        yield cfg
    finally:
        stack.pop()


def _args_of(text):
    return ast.literal_eval(text)


def _args_text(args):
    text = repr(tuple(args))
    try:
        if ast.literal_eval(text) != tuple(args):
            raise ValueError
    except (ValueError, SyntaxError):
        raise KilnError(f"template arguments {text} are not Python literals (numbers, strings, tuples)") from None
    return text


def _space_of(name, args):
    cfg = _Config()
    with _using(cfg):
        _templates[name](*args)
    return cfg.space


def _lowered(name, args, cfg):
    with _using(cfg):
        s, bufs = _templates[name](*args)
    return [_kiln.lower(s, bufs, name="default_function")]


def template(name):
    """Decorates a template function (AutoTVM's @autotvm.template("name")). Called
    directly, it schedules with the configuration the current apply_history_best
    context has for its arguments, or with the first of each knob's choices."""

    def register(fn):
        if name in _templates:
            raise KilnError(f"template '{name}' is defined twice")
        _templates[name] = fn
        _cpp.register_template(name,
                               lambda text: _space_of(name, _args_of(text)),
                               lambda text, index, choices: _lowered(name, _args_of(text), _Config(choices, index)))

        def dispatch(*args):
            stack = _context_stack()
            for ctx in reversed(stack):
                if isinstance(ctx, ApplyHistoryBest):
                    cfg = ctx._config(name, args)
                    if cfg is not None:
                        with _using(cfg):
                            return fn(*args)
                    break
            with _using(_Config()):
                return fn(*args)

        dispatch.__name__ = getattr(fn, "__name__", name)
        dispatch.__doc__ = fn.__doc__
        dispatch.template_name = name
        return dispatch

    return register


class Task:
    """One template and its arguments (AutoTVM's task): its space, flops and workload."""

    def __init__(self, name, args, target="llvm"):
        if name not in _templates:
            raise KilnError(f"no Python template '{name}' (defined: {', '.join(sorted(_templates)) or 'none'})")
        if target.split()[0] not in ("llvm", "cpu"):
            raise KilnError(f"task '{name}': Python templates are measured on the CPU (target 'llvm ...'), "
                            f"not '{target}'")
        self.name, self.args, self.target = name, tuple(args), target
        text = _args_text(self.args)
        self.config_space = _space_of(name, self.args)
        self.flop = _cpp.float_ops(_lowered(name, self.args, _Config()))
        self.workload = Workload(name, text, self.flop)

    def config(self, index):
        """The configuration `index` of the space, as the template sees it."""
        return _Config(self.config_space.choices(index), index)

    def __repr__(self):
        return f"Task({self.name}, {self.args}, target={self.target!r})"


task = types.SimpleNamespace(create=lambda name, args, target="llvm": Task(name, args, target), Task=Task)


# Measurement: a builder and a runner as AutoTVM has them; Kiln builds and times each
# candidate in one forked worker (tuner/measure.h), so both describe that worker.
class LocalBuilder:
    def __init__(self, timeout=10, n_parallel=None):
        self.timeout, self.n_parallel = timeout, n_parallel


class LocalRunner:
    def __init__(self, timeout=10, repeat=3, min_repeat_ms=25, warmup=1):
        self.timeout, self.repeat, self.min_repeat_ms, self.warmup = timeout, repeat, min_repeat_ms, warmup


class MpiRunner(LocalRunner):
    """Measures on the other MPI ranks of `session` (a MpiSession, under mpirun)."""

    def __init__(self, session, **kw):
        super().__init__(**kw)
        self.session = session


def measure_option(builder=None, runner=None):
    return {"builder": builder or LocalBuilder(), "runner": runner or LocalRunner()}


def _measure_dict(option, target):
    builder, runner = option["builder"], option["runner"]
    return {"timeout": builder.timeout + runner.timeout, "repeat": runner.repeat,
            "min_repeat_ms": runner.min_repeat_ms, "warmup": runner.warmup, "target": target}


# Callbacks: log_to_file is the C++ loop's own records file; any other callable gets a
# TuneProgress after every batch.
class _LogToFile:
    def __init__(self, path):
        self.path = str(path)


def _progress_bar(total=None, prefix=""):
    def show(p):
        best = f"{p.best_gflops:.2f} GFLOPS" if p.best_gflops else f"{p.best_cost:.3g}"
        workload = p.task.split(" ", 1)[-1]  # "template key": a template's own key starts with its name
        sys.stdout.write(f"\r{prefix}[{workload}] best {best} | {p.done}/{total or p.total} | "
                         f"{p.elapsed_s:.0f} s, ETA {p.eta_s:.0f} s")
        if p.done >= (total or p.total):
            sys.stdout.write("\n")
        sys.stdout.flush()
    return show


callback = types.SimpleNamespace(log_to_file=_LogToFile, progress_bar=_progress_bar)


class Tuner:
    """A search policy over one task's space (AutoTVM's Tuner); tune() runs the C++ loop."""

    policy = None

    def __init__(self, task, transfer=False):
        self.task = task
        self.transfer = transfer
        self.best_config = None
        self.best_flops = 0.0
        self.result = None

    def tune(self, n_trial, measure_option=None, early_stopping=None, callbacks=(), seed=0, resume=False):
        option = measure_option or globals()["measure_option"]()
        records = ""
        progress = []
        for cb in callbacks:
            if isinstance(cb, _LogToFile):
                if records:
                    raise KilnError("tune: give one log_to_file callback")
                records = cb.path
            elif callable(cb):
                progress.append(cb)
            else:
                raise KilnError(f"tune: callback {cb!r} is neither log_to_file nor callable")
        runner = option["runner"]
        session = runner.session if isinstance(runner, MpiRunner) else None
        jobs = option["builder"].n_parallel or 1
        res = _cpp.tune(self.task.name, self.task.workload, tuner=self.policy, trials=n_trial,
                        early_stopping=early_stopping or 0, records=records, seed=seed, transfer=self.transfer,
                        resume=resume, measure=_measure_dict(option, self.task.target), jobs=jobs, mpi=session,
                        on_progress=(lambda p: [cb(p) for cb in progress]) if progress else None)
        self.result = res
        if res.best is not None:
            self.best_config = self.task.config(res.best.config)
            self.best_flops = self.task.flop / res.best.cost if res.best.cost > 0 else 0.0
        return res


class XGBTuner(Tuner):
    """The XGBoost cost model's best-scored configurations (transfer=True: the model
    also learns from the records file's other workloads of the template)."""
    policy = "xgb"


class RandomTuner(Tuner):
    policy = "random"


class GridSearchTuner(Tuner):
    policy = "grid"


tuner = types.SimpleNamespace(Tuner=Tuner, XGBTuner=XGBTuner, RandomTuner=RandomTuner,
                              GridSearchTuner=GridSearchTuner)


class ApplyHistoryBest:
    """Within `with apply_history_best(records):`, a template called with the arguments of
    a tuned workload schedules with that workload's best record."""

    def __init__(self, records):
        self._best = best_records(load_records(str(records), missing_ok=False) if not isinstance(records, list) else records)

    def _config(self, name, args):
        rec = self._best.get(f"{name}:{_args_text(args)}")
        if rec is None:
            return None
        space = _space_of(name, tuple(args))
        return _Config(space.choices(rec.config), rec.config)

    def query(self, name, args):
        """The best record of a template's workload, or None."""
        return self._best.get(f"{name}:{_args_text(args)}")

    def __enter__(self):
        _context_stack().append(self)
        return self

    def __exit__(self, *exc):
        _context_stack().remove(self)
        return False


def apply_history_best(records):
    return ApplyHistoryBest(records)


def mpi_session():
    """The MPI session of a script started by mpirun (rank 0 tunes with
    MpiRunner(session); the other ranks call session.serve())."""
    return MpiSession()


__all__ = ["template", "get_config", "task", "Task", "measure_option", "LocalBuilder", "LocalRunner", "MpiRunner",
           "callback", "tuner", "Tuner", "XGBTuner", "RandomTuner", "GridSearchTuner", "apply_history_best",
           "ApplyHistoryBest", "SplitEntity", "ReorderEntity", "OtherOptionEntity", "Workload", "Record",
           "TuneResult", "TuneProgress", "MpiSession", "mpi_session", "load_records", "best_records",
           "template_names", "tuner_names", "launched_by_mpirun"]
