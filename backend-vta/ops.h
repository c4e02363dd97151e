#pragma once
// The VTA backend's front door for one operator: build a program from a workload
// and knobs (strategy -> schedule -> lower -> codegen), and run it on a device with
// host tensors in the packed layouts.
#include <cstdint>
#include <vector>

#include "backend-vta/program.h"
#include "backend-vta/strategy.h"
#include "hw/driver/device.h"

namespace kiln::vta {

Program build_conv2d(const Env& env, const Conv2DWorkload& wl, const Requant& rq, const Conv2DKnobs& knobs);

struct Conv2DResult {
  std::vector<int8_t> out;  // packed
  driver::Counters counters;
};

// The options the backend's programs run with unless told otherwise: device DRAM of
// 256 MiB, room for ResNet-18's largest layer with its double buffers.
driver::DeviceOptions default_device_options();

// Copies the packed tensors to device DRAM, runs, reads the packed output back.
Conv2DResult run_conv2d(driver::Device& dev, const Program& p, const std::vector<int8_t>& data,
                        const std::vector<int8_t>& kernel, const std::vector<int32_t>& bias,
                        runtime::StreamOptions opts = {});

Program build_add(const Env& env, const AddWorkload& wl, const Requant& rq, const AddKnobs& knobs);
// a + b (packed int8) with the identity block supplied; returns the packed output.
std::vector<int8_t> run_add(driver::Device& dev, const Program& p, const std::vector<int8_t>& a,
                            const std::vector<int8_t>& b, runtime::StreamOptions opts = {});
// The CPU reference of add_packed (any layout: elementwise).
std::vector<int8_t> reference_add(const Requant& rq, const std::vector<int8_t>& a, const std::vector<int8_t>& b);

Program build_max_pool2d(const Env& env, const PoolWorkload& wl, const PoolKnobs& knobs);
// Max pooling of packed int8 data with the identity block supplied; returns the packed output.
std::vector<int8_t> run_max_pool2d(driver::Device& dev, const Program& p, const std::vector<int8_t>& data,
                                   runtime::StreamOptions opts = {});
// The CPU reference of max_pool2d_packed on packed data (the padding counts as 0).
std::vector<int8_t> reference_max_pool2d(const Env& env, const PoolWorkload& wl, const std::vector<int8_t>& data);

}  // namespace kiln::vta
