"""Builds Kiln's Python package as a wheel: python/kiln plus the extension module
kiln._kiln, which CMake builds (python/CMakeLists.txt). Used by pip through
pyproject.toml; see docs/python.md:

    pip install --no-build-isolation .                   # add --break-system-packages on Debian
    pip wheel --no-build-isolation --no-deps -w dist .

The build directory: $KILN_BUILD_DIR, else ./build. One that CMake has configured
already (a CMakeCache.txt) is reused and only the `_kiln` target is brought up to date,
so a developer's build tree is not built again; otherwise it is configured first, as
`make build` does. $KILN_BUILD_JOBS sets the parallel jobs (default: the CPUs).
"""
import os
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(os.environ.get("KILN_BUILD_DIR") or os.path.join(ROOT, "build"))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(kiln VERSION ([0-9.]+)", f.read()).group(1)


class CMakeBuild(build_ext):
    """build_ext for the one extension, kiln._kiln: CMake builds it, this copies it in."""

    def build_extension(self, ext):
        if not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            self.spawn(["cmake", "-S", ROOT, "-B", BUILD, *generator, f"-DPython_EXECUTABLE={sys.executable}"])
        jobs = os.environ.get("KILN_BUILD_JOBS") or str(os.cpu_count() or 2)
        self.spawn(["cmake", "--build", BUILD, "--target", "_kiln", "-j", jobs])
        built = os.path.join(BUILD, "python", "kiln", "_kiln" + sysconfig.get_config_var("EXT_SUFFIX"))
        if not os.path.exists(built):
            raise RuntimeError(f"{built} was not built: {BUILD} is configured for another Python than {sys.executable} "
                               "(its Python_EXECUTABLE), or without pybind11-dev (scripts/install-deps.sh installs it)")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built, dest)


# setuptools' own scratch (build/lib.*, the egg-info) goes under the CMake build
# directory, not into the source tree.
SCRATCH = os.path.join(BUILD, "setuptools")
os.makedirs(SCRATCH, exist_ok=True)

setup(
    version=project_version(),
    packages=["kiln"],
    package_dir={"kiln": "python/kiln"},
    ext_modules=[Extension("kiln._kiln", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": SCRATCH}, "egg_info": {"egg_base": SCRATCH}},
    zip_safe=False,
)
