#!/usr/bin/python3
"""One ResNet-18 layer on the Verilated RTL: its module timeline and counters, plotted.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/rtl_timeline.py OUT_DIR [--layer C11] [--config default]

writes OUT_DIR/LAYER.trace.json (the rtl device's timeline of module activity, Chrome
trace JSON: open it in https://ui.perfetto.dev too), OUT_DIR/timeline.svg (what the
fetch, load, compute and store modules do in each cycle) and OUT_DIR/counters.svg (the
performance counters), and prints the result. A notebook in script form: each `# %%`
cell runs on its own in Jupyter or VS Code.
"""
# %% [markdown]
# ## The accelerator and the layer
#
# A configuration (hw/config/*.json) fixes the GEMM core's shape and the scratchpads;
# the rtl device is the Verilated RTL of that configuration. Device settings are the
# `kiln` command's device flags, spelled as keywords: `trace` writes the timeline,
# `dram_latency=64` would slow the memory down.
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
from matplotlib.patches import Patch

import kiln
from kiln import hw

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("out_dir", help="where the trace and the SVGs go")
parser.add_argument("--layer", default="C11", help="one of ResNet-18's C2..C12 (default C11, the quickest)")
parser.add_argument("--config", default="default", help="a configuration in hw/config, or a path")
args = parser.parse_args()
os.makedirs(args.out_dir, exist_ok=True)

if "rtl" not in hw.device_kinds():
    sys.exit("this build has no rtl device (Verilator was not found)")
cfg = hw.config(args.config)
layers = {w.name: w for w in hw.resnet18_conv_workloads()}
layer = layers[args.layer]
print(f"{layer} on {cfg!r}: {layer.macs} MACs")

# %% [markdown]
# ## Run it
#
# `kiln.hw.conv2d` is `kiln vta conv2d --layer LAYER --device rtl`: the default schedule
# for this configuration, random int8 tensors, the run, and the CPU reference.
trace_path = os.path.join(args.out_dir, f"{layer.name}.trace.json")
dev = hw.device("rtl", cfg, dram_mb=256, trace=trace_path)
run = hw.conv2d(dev, layer, hw.Requant(bias=False))
counters = run.counters
print(f"schedule {run.knobs}; matches the CPU reference: {run.matches_reference}")
print(f"{counters['cycles']} cycles for {run.stats['gemm_uops']} GEMM micro-ops "
      f"(GEMM utilization {run.stats['gemm_uops'] / counters['cycles']:.1%})")
if not run.matches_reference:
    sys.exit("the RTL's result differs from the CPU reference")

# %% [markdown]
# ## The timeline
#
# The trace has one track (a thread) per module; each interval ("X" event) is a run of
# cycles in one state on one instruction: busy, waiting for a dependency token, or
# waiting for room in a queue. Time is in cycles.
with open(trace_path) as f:
    events = json.load(f)["traceEvents"]
tracks = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
modules = [tid for tid in sorted(tracks) if tracks[tid] != "runs"]
colors = {"busy": "tab:green", "stall_token": "tab:red", "stall_queue": "tab:orange"}
labels = {"busy": "busy", "stall_token": "token wait", "stall_queue": "queue full"}
spans = {(tid, state): [] for tid in modules for state in colors}
for e in events:
    if e["ph"] == "X" and (e["tid"], e.get("cat")) in spans:
        spans[(e["tid"], e["cat"])].append((e["ts"], e["dur"]))

plt.rcParams["svg.fonttype"] = "none"  # text stays text in the SVG
fig, ax = plt.subplots(figsize=(12, 3.2))
for row, tid in enumerate(modules):
    for state, color in colors.items():
        ax.broken_barh(spans[(tid, state)], (row - 0.4, 0.8), facecolors=color, linewidth=0)
ax.set_yticks(range(len(modules)), [tracks[tid] for tid in modules])
ax.invert_yaxis()
ax.set_xlim(0, counters["cycles"])
ax.set_xlabel("cycle")
ax.set_title(f"{layer} on the RTL ({cfg.name}): {counters['cycles']} cycles")
ax.legend(handles=[Patch(color=c, label=labels[s]) for s, c in colors.items()],
          loc="upper center", bbox_to_anchor=(0.5, -0.25), ncols=3, frameon=False)
fig.savefig(os.path.join(args.out_dir, "timeline.svg"), bbox_inches="tight")

# %% [markdown]
# ## The counters
#
# Left: each module's busy and stalled cycles against the run's cycles (the trace's
# intervals add up to these exactly). Right: what the run moved and computed.
names = ["load", "compute", "store"]
busy = [counters[f"{m}_busy_cycles"] for m in names]
stall = [counters[f"{m}_stall_cycles"] for m in names]
work = {k: v for k, v in counters.items() if not k.endswith("cycles") and v > 0}

fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4), width_ratios=[1, 2])
left.bar(names, busy, color=colors["busy"], label="busy")
left.bar(names, stall, bottom=busy, color=colors["stall_token"], label=labels["stall_token"])
left.axhline(counters["cycles"], color="black", linestyle="--", label="cycles")
left.set_ylabel("cycles")
left.legend(fontsize="small")
right.barh(list(work), list(work.values()), color="tab:blue")
right.set_xscale("log")
right.invert_yaxis()
for y, v in enumerate(work.values()):
    right.text(v, y, f" {v}", va="center", fontsize="small")
fig.suptitle(f"{layer.name} on the RTL ({cfg.name}): performance counters")
fig.tight_layout()
fig.savefig(os.path.join(args.out_dir, "counters.svg"))
print(f"wrote {args.out_dir}/timeline.svg, counters.svg and {os.path.basename(trace_path)}")
