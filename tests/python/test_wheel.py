# `pip install .` (pyproject.toml, setup.py): the wheel, built against this build tree
# (KILN_BINARY_DIR: only the _kiln target is brought up to date, nothing is rebuilt),
# installs with pip into a folder of its own, and a fresh interpreter that sees only
# that folder imports kiln from it and builds and runs a function.
import os
import pathlib
import subprocess
import sys
import zipfile

SOURCE = pathlib.Path(os.environ["KILN_SOURCE_DIR"])
BINARY = pathlib.Path(os.environ["KILN_BINARY_DIR"])

PROGRAM = """
import numpy, kiln
from kiln import te
assert kiln.__file__.startswith(%r), kiln.__file__
A = te.placeholder((64,), name="A")
B = te.compute((64,), lambda i: A[i] * 2.0 + 1.0, name="B")
s = te.create_schedule(B.op)
f = kiln.build(s, [A, B], target="llvm", name="twice")
a = numpy.arange(64, dtype="float32")
b = numpy.zeros(64, "float32")
f(a, b)
numpy.testing.assert_array_equal(b, a * 2 + 1)
print("ok", kiln.build_model.__name__)
"""


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, " ".join(cmd) + "\n" + r.stdout[-3000:] + r.stderr[-3000:]
    return r


def test_pip_builds_a_wheel_that_installs_and_imports_on_its_own(tmp_path):
    env = dict(os.environ, KILN_BUILD_DIR=str(BINARY), KILN_BUILD_JOBS="2")
    env.pop("PYTHONPATH", None)
    dist = tmp_path / "dist"
    sh([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w", str(dist),
        str(SOURCE)], env=env)
    (wheel,) = dist.glob("kiln-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "kiln/__init__.py" in names and "kiln/te.py" in names, names
    assert any(n.startswith("kiln/_kiln.") and n.endswith(".so") for n in names), names

    site = tmp_path / "site"
    sh([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(site), str(wheel)], env=env)
    run = sh([sys.executable, "-c", PROGRAM % str(site)], env=dict(env, PYTHONPATH=str(site)), cwd=tmp_path)
    assert run.stdout.strip() == "ok build_model", run.stdout + run.stderr
