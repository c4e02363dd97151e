"""ONNX Runtime as a benchmark peer: its CPU build from npm (onnxruntime-node 1.30 ships
libonnxruntime; no C headers come with it), driven by /usr/bin/node from the benches'
Python scripts. One owner for the benches that time ONNX Runtime (bench/models,
bench/int8_cpu).

  ensure(prefix)        installs onnxruntime-node@1.30.0 under PREFIX/node_modules when
                        it is missing (`npm install --ignore-scripts`: its install script
                        only fetches GPU builds) and returns that node_modules folder
  latency(node_modules, model, threads, repeat, inputs)
                        the median/min/max ms of session.run on the given inputs (a dict
                        name -> numpy array), 3 warm-up runs first
  node_profile(node_modules, model, threads, repeat, inputs)
                        ONNX Runtime's own per-node times (its profiler, enableProfiling):
                        [(node name, op type, median ms)] in the order the nodes ran, the
                        warm-up runs left out
"""
import json
import os
import subprocess
import tempfile

import numpy as np

VERSION = "1.30.0"

# What both node scripts begin with: the session on `threads` intra-op threads, one
# inter-op thread, sequential (plus `extra` options), and the feeds read from the
# files _feeds wrote. Defines `s` and `feeds` inside the async main.
def _session_js(extra=""):
    return r"""
const fs = require('fs');
const [mod, path, threadArg, repeatArg, feedsArg, prefix] = process.argv.slice(1);
const ort = require(mod);
const [threads, repeat] = [+threadArg, +repeatArg];
const arrays = {float32: Float32Array, int64: BigInt64Array, int32: Int32Array, int8: Int8Array, uint8: Uint8Array};
(async () => {
  const s = await ort.InferenceSession.create(path, {intraOpNumThreads: threads, interOpNumThreads: 1,
                                                     executionMode: 'sequential'""" + extra + r"""});
  const feeds = {};
  for (const [name, f] of Object.entries(JSON.parse(fs.readFileSync(feedsArg, 'utf8')))) {
    const b = fs.readFileSync(f.file);
    const data = new arrays[f.type](b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
    feeds[name] = new ort.Tensor(f.type, data, f.dims);
  }
"""


_END_JS = r"""
})().catch(e => { console.error(String(e)); process.exit(1); });
"""

_JS = _session_js() + r"""
  for (let i = 0; i < 3; i++) await s.run(feeds);
  const t = [];
  for (let i = 0; i < repeat; i++) {
    const t0 = process.hrtime.bigint();
    await s.run(feeds);
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  t.sort((a, b) => a - b);
  console.log(JSON.stringify({median: t[Math.floor(t.length / 2)], min: t[0], max: t[t.length - 1]}));
""" + _END_JS


_PROFILE_JS = _session_js(", enableProfiling: true, profileFilePrefix: prefix") + r"""
  for (let i = 0; i < 3 + repeat; i++) await s.run(feeds);
  s.endProfiling();
""" + _END_JS


def _feeds(d, inputs):
    feeds = {}
    for i, (name, x) in enumerate(inputs.items()):
        f = os.path.join(d, f"in{i}.bin")
        np.ascontiguousarray(x).tofile(f)
        feeds[name] = {"type": str(x.dtype), "dims": list(x.shape), "file": f}
    spec = os.path.join(d, "feeds.json")
    with open(spec, "w") as f:
        json.dump(feeds, f)
    return spec


def node_profile(node_modules, model, threads, repeat, inputs):
    mod = os.path.join(os.path.abspath(node_modules), "onnxruntime-node")
    with tempfile.TemporaryDirectory() as d:
        spec = _feeds(d, inputs)
        subprocess.run(["/usr/bin/node", "-e", _PROFILE_JS, "--", mod, model, str(threads), str(repeat), spec,
                        os.path.join(d, "ort_profile")], check=True, capture_output=True, text=True)
        files = sorted(f for f in os.listdir(d) if f.startswith("ort_profile") and f.endswith(".json"))
        if not files:
            raise RuntimeError("onnxruntime-node wrote no profile")
        with open(os.path.join(d, files[-1])) as f:
            events = json.load(f)
    order, times, ops = [], {}, {}
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        name = e["name"][:-len("_kernel_time")]
        if name not in times:
            order.append(name)
            times[name] = []
            ops[name] = e.get("args", {}).get("op_name", "")
        times[name].append(e["dur"] / 1e3)
    # Each node ran 3 + repeat times: the first 3 are the warm-up.
    return [(n, ops[n], float(np.median(times[n][3:] or times[n]))) for n in order]


def ensure(prefix):
    node_modules = os.path.join(os.path.abspath(prefix), "node_modules")
    if not os.path.isdir(os.path.join(node_modules, "onnxruntime-node")):
        os.makedirs(prefix, exist_ok=True)
        subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", prefix,
                        f"onnxruntime-node@{VERSION}"], check=True, capture_output=True, text=True)
    return node_modules


def latency(node_modules, model, threads, repeat, inputs):
    mod = os.path.join(os.path.abspath(node_modules), "onnxruntime-node")
    with tempfile.TemporaryDirectory() as d:
        spec = _feeds(d, inputs)
        out = subprocess.run(["/usr/bin/node", "-e", _JS, "--", mod, model, str(threads), str(repeat), spec],
                             check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])
