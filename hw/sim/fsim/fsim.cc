#include "hw/sim/fsim/fsim.h"

#include "hw/spec/error.h"

namespace kiln::sim {

struct Fsim::Impl {};

Fsim::Fsim(const hw::Config& cfg, std::span<uint8_t> dram)
    : cfg_(cfg), layout_(cfg), dram_(dram) {
  inp_.assign(size_t{cfg.inp_depth()} * cfg.batch() * cfg.block_in(), 0);
  wgt_.assign(size_t{cfg.wgt_depth()} * cfg.block_out() * cfg.block_in(), 0);
  acc_.assign(size_t{cfg.acc_depth()} * cfg.batch() * cfg.block_out(), 0);
  out_.assign(size_t{cfg.out_depth()} * cfg.batch() * cfg.block_out(), 0);
  uops_.assign(cfg.uop_depth(), hw::Uop{});
}

void Fsim::run(uint64_t, uint32_t) { throw hw::Error("fsim: run() is not implemented yet"); }

std::span<const int64_t> Fsim::acc(uint32_t index) const {
  size_t n = size_t{static_cast<uint32_t>(cfg_.batch())} * cfg_.block_out();
  return std::span<const int64_t>(acc_).subspan(index * n, n);
}
std::span<const int64_t> Fsim::out(uint32_t index) const {
  size_t n = size_t{static_cast<uint32_t>(cfg_.batch())} * cfg_.block_out();
  return std::span<const int64_t>(out_).subspan(index * n, n);
}
std::span<const int64_t> Fsim::inp(uint32_t index) const {
  size_t n = size_t{static_cast<uint32_t>(cfg_.batch())} * cfg_.block_in();
  return std::span<const int64_t>(inp_).subspan(index * n, n);
}
std::span<const int64_t> Fsim::wgt(uint32_t index) const {
  size_t n = size_t{static_cast<uint32_t>(cfg_.block_out())} * cfg_.block_in();
  return std::span<const int64_t>(wgt_).subspan(index * n, n);
}
hw::Uop Fsim::uop(uint32_t index) const { return uops_.at(index); }

}  // namespace kiln::sim
