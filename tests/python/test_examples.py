# The Python examples (examples/python) run as a user runs them, with Debian's python3,
# into a temporary directory, and make what they promise.
import os
import pathlib
import subprocess
import sys

import pytest

from kiln import hw

EXAMPLES = pathlib.Path(os.environ.get("KILN_SOURCE_DIR", pathlib.Path(__file__).parents[2])) / "examples" / "python"


@pytest.mark.skipif("rtl" not in hw.device_kinds(), reason="no rtl device in this build")
def test_rtl_timeline_plots_a_layers_timeline_and_counters_as_svg(tmp_path):
    out = subprocess.run([sys.executable, str(EXAMPLES / "rtl_timeline.py"), str(tmp_path), "--layer", "C11"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "matches the CPU reference: True" in out.stdout
    timeline = (tmp_path / "timeline.svg").read_text()
    counters = (tmp_path / "counters.svg").read_text()
    assert timeline.startswith("<?xml") and "<svg" in timeline
    for track in ("fetch", "load", "compute", "store", "token wait"):
        assert f">{track}</text>" in timeline, track
    for counter in ("load_insns", "gemm_uops", "dram_read_bytes"):
        assert f">{counter}</text>" in counters, counter
    assert (tmp_path / "C11.trace.json").stat().st_size > 0
