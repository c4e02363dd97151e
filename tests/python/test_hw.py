# kiln.hw: configurations, devices with their settings, the runtime's command stream on
# fsim and on the Verilated RTL (results compared with NumPy), counters, the activity
# trace, and a conv2d through the VTA backend checked against the CPU reference. The tiny
# configuration (1x4x4) keeps the RTL runs to a fraction of a second each.
import json
import os
import pathlib

import numpy
import pytest

import kiln
from kiln import hw

SOURCE = pathlib.Path(os.environ.get("KILN_SOURCE_DIR", pathlib.Path(__file__).parents[2]))
HAS_RTL = "rtl" in hw.device_kinds()
HAS_SYSTEMC = "systemc" in hw.device_kinds()
# fsim always; the RTL's two cores where this build has Verilator, and the SystemC platform.
NO_RTL = pytest.mark.skipif(not HAS_RTL, reason="no rtl device in this build")
DEVICES = [("fsim", {}), pytest.param("rtl", {}, marks=NO_RTL), pytest.param("rtl", {"core": "inorder"}, marks=NO_RTL),
           pytest.param("systemc", {}, marks=pytest.mark.skipif(not HAS_SYSTEMC, reason="no systemc device"))]


def test_configurations_load_by_name_path_and_json():
    default, tiny = hw.config("default"), hw.config("tiny")
    assert (default.batch, default.block_in, default.block_out) == (1, 16, 16)
    assert (tiny.batch, tiny.block_in, tiny.block_out) == (1, 4, 4)
    assert (tiny.inp_width, tiny.wgt_width, tiny.acc_width) == (8, 8, 32)
    assert tiny.params["LOG_BLOCK"] == 2 and tiny.inp_buff_bytes == 1 << tiny.params["LOG_INP_BUFF_SIZE"]
    assert tiny.inp_depth == tiny.inp_buff_bytes // tiny.inp_elem_bytes
    assert default == hw.Config.default() and default != tiny
    assert default.fingerprint != tiny.fingerprint
    assert hw.config(SOURCE / "hw" / "config" / "tiny.json") == tiny
    assert hw.Config.from_json(json.dumps(tiny.params)) == tiny
    assert json.loads(tiny.to_json())["derived"]


def test_a_bad_configuration_raises_with_the_cpp_message():
    with pytest.raises(kiln.DeviceError, match="configuration 'no-such' is neither a file nor a name.*tiny"):
        hw.config("no-such")
    bad = dict(hw.config("tiny").params, LOG_BLOCK=99)
    with pytest.raises(kiln.DeviceError, match="LOG_BLOCK"):
        hw.Config.from_json(json.dumps(bad), "bad.json")
    with pytest.raises(kiln.KilnError, match="bad.json: not valid JSON"):
        hw.Config.from_json("{", "bad.json")


def test_device_settings_go_through_the_one_table():
    assert {"dram_latency", "trace", "core"} <= {s["name"] for s in hw.device_settings()}
    with pytest.raises(kiln.DeviceError, match="dram_latency applies to --device rtl.*the device is fsim"):
        hw.device("fsim", "tiny", dram_latency=64)
    with pytest.raises(kiln.DeviceError, match="no device setting 'dram_latencyy'"):
        hw.device("fsim", "tiny", dram_latencyy=64)
    with pytest.raises(kiln.DeviceError, match="unknown device 'nope'"):
        hw.device("nope", "tiny")
    if HAS_RTL:
        with pytest.raises(kiln.DeviceError, match="core bogus: expected decoupled or inorder"):
            hw.device("rtl", "tiny", core="bogus")
    assert hw.device("fsim", "tiny", dram_mb=2).dram_bytes == 2 << 20


def test_device_memory_round_trips_numpy_arrays():
    dev = hw.device("fsim", "tiny", dram_mb=1)
    a = numpy.arange(-50, 50, dtype=numpy.int32)
    addr = dev.alloc(a.nbytes)
    dev.write(addr, a)
    assert numpy.array_equal(dev.read(addr, a.size, numpy.int32), a)
    dev.write(addr, b"\x01\x02")
    assert list(dev.read(addr, 2)) == [1, 2]
    with pytest.raises(kiln.DeviceError):
        dev.read(dev.dram_bytes - 4, 8)
    with pytest.raises(kiln.DeviceError, match="expected an array"):
        dev.write(addr, object())
    dev.free(addr)


def alu_add_program(s, acc_addr, out_addr, n, imm):
    """acc[0..n) = DRAM int32; acc += imm on the ALU; its low 8 bits stored (OUT is ACC's low bits)."""
    s.load_2d("acc", 0, acc_addr, 1, n, n)
    s.push_alu(hw.UopKernelBuilder.alu_imm("add", "add", imm).loop_begin(n, 1, 1).push(0, 0).loop_end().finish())
    s.dep_push("compute", "store")
    s.dep_pop("compute", "store")
    s.store_2d(0, out_addr, 1, n, n)


@pytest.mark.parametrize("kind,settings", DEVICES)
def test_a_command_stream_program_matches_numpy(kind, settings):
    dev = hw.device(kind, "tiny", dram_mb=4, **settings)
    cfg = dev.config
    n, lanes = 6, cfg.batch * cfg.block_out
    acc = numpy.random.default_rng(1).integers(-100000, 100000, size=(n, lanes), dtype=numpy.int32)
    acc_addr, out_addr = dev.alloc(acc.nbytes), dev.alloc(n * lanes)
    dev.write(acc_addr, acc)
    s = hw.CommandStream(dev)
    alu_add_program(s, acc_addr, out_addr, n, 3)
    assert "alu" in s.disassemble() and len(s.pending) >= 4
    s.synchronize()
    expected = (acc + 3).astype(numpy.int8).ravel()
    assert numpy.array_equal(dev.read(out_addr, n * lanes, "int8"), expected)

    program = s.last_program
    assert program[-1].opcode == "finish" and program[0].module in ("load", "compute")
    text = hw.disassemble(program, cfg)
    assert hw.assemble(text, cfg).insns == program
    counters = dev.counters()
    assert counters["alu_uops"] == n and counters.get("store_bytes", n * lanes) == n * lanes  # inorder: no bytes
    assert s.counters() == counters
    assert ("cycles" in counters) == (kind != "fsim")

    # The same program again from its encoded bytes, run through the registers.
    dev.write(out_addr, numpy.zeros(n * lanes, numpy.int8))
    image = hw.encode_program(program, cfg)
    assert len(image) == len(program) * hw.INSN_BYTES and hw.decode_program(image, cfg) == program
    insn_addr = dev.alloc(len(image))
    dev.write(insn_addr, image)
    dev.run(insn_addr, len(program))
    assert numpy.array_equal(dev.read(out_addr, n * lanes, "int8"), expected)


def test_a_bad_stream_raises_with_the_device_message():
    dev = hw.device("fsim", "tiny", dram_mb=1)
    s = hw.CommandStream(dev)
    with pytest.raises(kiln.DeviceError, match="memory type 'accc': expected one of uop, wgt, inp, acc, out"):
        s.load_2d("accc", 0, 0, 1, 1, 1)
    with pytest.raises(kiln.DeviceError, match="ALU operation 'sub'"):
        hw.UopKernelBuilder.alu_imm("k", "sub", 1)


@pytest.mark.skipif(not HAS_RTL, reason="no rtl device in this build")
def test_the_rtl_writes_a_trace_of_module_activity(tmp_path):
    trace = tmp_path / "t.json"
    dev = hw.device("rtl", "tiny", dram_mb=4, trace=trace, dram_latency=16)
    acc_addr, out_addr = dev.alloc(64 * 16), dev.alloc(64 * 4)
    s = hw.CommandStream(dev)
    alu_add_program(s, acc_addr, out_addr, 16, 1)
    s.synchronize()
    events = json.loads(trace.read_text())["traceEvents"]
    tracks = {e["args"]["name"]: e["tid"] for e in events if e.get("name") == "thread_name"}
    assert {"fetch", "load", "compute", "store"} <= set(tracks)
    busy = sum(e["dur"] for e in events if e.get("cat") == "busy" and e["tid"] == tracks["compute"])
    assert busy == dev.counters()["compute_busy_cycles"] > 0


SMALL_CONV = dict(name="small", height=6, width=6, in_channels=8, out_channels=8, kernel=3, pad=1)


@pytest.mark.parametrize("kind,settings", [DEVICES[0], DEVICES[1], DEVICES[3]])
def test_a_conv2d_layer_matches_the_cpu_reference(kind, settings):
    dev = hw.device(kind, "tiny", dram_mb=16, **settings)
    wl = hw.Conv2DWorkload(**SMALL_CONV)
    run = hw.conv2d(dev, wl, hw.Requant(bias=True, shift=6))
    assert run.matches_reference
    assert numpy.array_equal(run.output, run.reference) and run.output.shape == (1, 8, 6, 6)
    assert run.counters["gemm_uops"] == run.stats["gemm_uops"] + run.stats["gemm_reset_uops"]
    if kind != "fsim":
        assert run.counters["cycles"] >= run.stats["gemm_uops"]
        assert all(run.counters[f"{m}_busy_cycles"] > 0 for m in ("load", "compute", "store"))
    program = hw.build_conv2d("tiny", wl, hw.Requant(bias=True, shift=6), run.knobs)
    assert program.stats() == run.stats and [a[0] for a in program.args][-1] == run.program.args[-1][0]


def test_resnet18_layers_and_knobs():
    layers = {w.name: w for w in hw.resnet18_conv_workloads()}
    assert list(layers) == [f"C{i}" for i in range(2, 13)]
    c12 = layers["C12"]
    assert (c12.height, c12.in_channels, c12.out_channels, c12.kernel_h) == (7, 512, 512, 3)
    knobs = hw.default_conv2d_knobs("default", c12)
    assert str(knobs).startswith("tile_b=1 ") and knobs == hw.default_conv2d_knobs(hw.config("default"), c12)
    with pytest.raises(kiln.CompileError):
        hw.build_conv2d("default", hw.Conv2DWorkload(height=4, width=4, in_channels=3, out_channels=16))
