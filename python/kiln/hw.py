"""The accelerator from Python (hw/spec, hw/driver): configurations, devices, the runtime's
command stream, counters and traces, and one operator through the VTA backend.

    cfg = kiln.hw.config("tiny")                 # a name in hw/config, a path, or Config.from_json(text)
    dev = kiln.hw.device("rtl", cfg, dram_latency=64, trace="run.json")   # settings: kiln.hw.device_settings()
    run = kiln.hw.conv2d(dev, kiln.hw.resnet18_conv_workloads()[9])       # as `kiln vta conv2d --layer C11`
    run.matches_reference, run.counters["cycles"], run.stats["gemm_uops"]

    s = kiln.hw.CommandStream(dev)               # the runtime: load_2d, push_alu, dep_push, synchronize
    s.load_2d("acc", 0, addr, 1, n, n)

Every number is the C++ core's; errors arrive as kiln.DeviceError with its message.
"""
from . import _kiln

__all__ = [name for name in dir(_kiln.hw) if not name.startswith("_")]
globals().update({name: getattr(_kiln.hw, name) for name in __all__})
