# The two commands of the quick start: `make demo` and `make test`.
# Each installs what is missing, configures, builds with -j2, then runs.

BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo test fuzz sanitize clean

all: build

deps:
	./scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

MODELS = $(BUILD)/demo-models

# The accelerator: int8 GEMM and conv2d through the runtime on fsim, checked against
# C++ references; ResNet-18's last 3x3 convolution compiled by the VTA backend and run
# on the Verilated RTL, checked against the CPU reference, with its cycle count. Then
# the main job: ResNet-18 (random weights, exported by PyTorch) compiled and run on the
# CPU, its output compared with PyTorch's; then quantized to int8 (calibrated on random
# inputs, power-of-two scales) and run whole with the accelerator's RTL: its cycles per
# layer and in total, the output checked bit for bit against the CPU's execution of the
# same int8 graph, and its top-1 agreement and SQNR against the float model.
demo: build
	./$(BUILD)/examples/runtime/runtime_demo
	./$(BUILD)/tools/kiln/kiln vta conv2d --layer C12 --device rtl
	/usr/bin/python3 examples/models/export_models.py $(MODELS) resnet18
	./$(BUILD)/tools/kiln/kiln run $(MODELS)/resnet18.onnx --input input=$(MODELS)/resnet18.input.npy \
	    --output $(MODELS)/resnet18.kiln-output.npy --repeat 10
	/usr/bin/python3 -c "import numpy as np; k = np.load('$(MODELS)/resnet18.kiln-output.npy'); \
	    t = np.load('$(MODELS)/resnet18.output.npy'); e = float(abs(k - t).max() / abs(t).max()); \
	    print(f'ResNet-18: max error against PyTorch {e:.2e} of the largest output'); exit(e > 1e-4)"
	/usr/bin/python3 -c "import numpy as np, os; os.makedirs('$(MODELS)/calibration', exist_ok=True); \
	    r = np.random.default_rng(0); [np.save(f'$(MODELS)/calibration/x{i}.npy', \
	    r.standard_normal((1, 3, 224, 224)).astype(np.float32)) for i in range(8)]"
	./$(BUILD)/tools/kiln/kiln quantize $(MODELS)/resnet18.onnx --calibrate $(MODELS)/calibration \
	    -o $(MODELS)/resnet18.q.onnx
	./$(BUILD)/bench/vta_model/kiln_bench_vta_model $(MODELS)/resnet18.q.onnx --config default --device rtl \
	    --float $(MODELS)/resnet18.onnx --samples 10

test: build
	cd $(BUILD) && ctest -j$(JOBS) --output-on-failure

# Every libFuzzer harness (tests/fuzz, built with clang-19 in $(BUILD)/fuzz) for
# FUZZ_SECONDS each, or for FUZZ_RUNS executions each if that is given, one after
# another; a crash's input is named in the output.
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?=
fuzz: build
ifeq ($(FUZZ_RUNS),)
	cd $(BUILD) && KILN_FUZZ_SECONDS=$(FUZZ_SECONDS) ctest -L fuzz -V --output-on-failure --timeout $$(( $(FUZZ_SECONDS) + 300 ))
else
	cd $(BUILD) && KILN_FUZZ_RUNS=$(FUZZ_RUNS) ctest -L fuzz -V --output-on-failure --timeout 86400
endif

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer.
sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DKILN_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"

clean:
	rm -rf $(BUILD)
