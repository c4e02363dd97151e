#include "examples/matrix-unit/mxu_codegen.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::mxu {

namespace {

constexpr int64_t kM = MxuConfig::kTileM, kK = MxuConfig::kTileK, kN = MxuConfig::kTileN;

// The blocking: `kc` K tiles of weights per load (all of K when they fit), `nb` weight
// tile columns stationary at once, `mb` row tiles of A per block.
struct Blocking {
  int64_t kc = 0, nb = 0, mb = 0;
};

Blocking blocking(const MxuConfig& c, const MatmulKernel& k) {
  int64_t kt = k.k / kK, nt = k.n / kN, mt = k.m / kM;
  Blocking b;
  // K: as many tiles as one column of weights and one row tile of A hold.
  b.kc = std::min({kt, c.w_bytes / (kK * kN), c.a_bytes / (kM * kK)});
  b.nb = std::clamp<int64_t>(c.w_bytes / (b.kc * kK * kN), 1, nt);
  b.nb = std::min(b.nb, c.acc_bytes / (4 * kM * kN));
  b.mb = std::min({mt, c.a_bytes / (kM * b.kc * kK), c.acc_bytes / (4 * kM * b.nb * kN)});
  return b;
}

}  // namespace

std::string matmul_problem(const MxuConfig& c, const MatmulKernel& k) {
  if (k.m <= 0 || k.k <= 0 || k.n <= 0 || k.m % kM || k.k % kK || k.n % kN)
    return fmt::format("{}: {}x{}x{} is not a whole number of {}x{}x{} tiles", k.name, k.m, k.k, k.n, kM, kK, kN);
  if (k.shift < 0 || k.shift > 31) return fmt::format("{}: requantization shift {} is outside 0..31", k.name, k.shift);
  // Row pitches must fit the commands' 32-bit fields, sizes 64 bits.
  if (std::max({k.m, k.k, k.n}) > (int64_t{1} << 30))
    return fmt::format("{}: {}x{}x{} has a dimension past 2^30", k.name, k.m, k.k, k.n);
  if (c.a_bytes < kM * kK || c.w_bytes < kK * kN || c.acc_bytes < 4 * kM * kN)
    return fmt::format("{}: the scratchpads do not hold one tile", k.name);
  return "";
}

int64_t ideal_matmuls(const MatmulKernel& k) { return k.m / kM * (k.k / kK) * (k.n / kN); }

std::vector<Command> matmul_commands(const MxuConfig& c, const MatmulKernel& k) {
  if (std::string why = matmul_problem(c, k); !why.empty()) throw MxuError(why);
  const int64_t kt = k.k / kK, nt = k.n / kN, mt = k.m / kM;
  const Blocking b = blocking(c, k);
  const bool resident = b.kc == kt;  // all of K's weights stay for every row block
  std::vector<Command> out;
  auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  auto load_w = [&](int64_t k0, int64_t kn, int64_t n0, int64_t nn) {
    Command w{Opcode::kLoadW};
    w.arg = 1;
    w.dram = static_cast<uint64_t>((k0 * nt + n0) * kK * kN);
    w.rows = u32(kn);             // one row per K tile
    w.cols = u32(nn * kK * kN);   // its nn weight tiles, side by side
    w.stride = u32(nt * kK * kN);
    out.push_back(w);
  };
  for (int64_t n0 = 0; n0 < nt; n0 += b.nb) {
    const int64_t nn = std::min(b.nb, nt - n0), cols = nn * kN;
    if (resident) load_w(0, kt, n0, nn);
    for (int64_t m0 = 0; m0 < mt; m0 += b.mb) {
      const int64_t mm = std::min(b.mb, mt - m0), rows = mm * kM;
      Command bias{Opcode::kLoadBias};
      bias.arg = 2;
      bias.dram = static_cast<uint64_t>(n0 * kN * 4);
      bias.rows = u32(rows);
      bias.cols = u32(cols);
      out.push_back(bias);
      for (int64_t k0 = 0; k0 < kt; k0 += b.kc) {
        const int64_t kn = std::min(b.kc, kt - k0);
        if (!resident) load_w(k0, kn, n0, nn);
        Command a{Opcode::kLoadA};
        a.arg = 0;
        a.dram = static_cast<uint64_t>(m0 * kM * k.k + k0 * kK);
        a.rows = u32(rows);
        a.cols = u32(kn * kK);
        a.stride = u32(k.k);
        out.push_back(a);
        // Weight-stationary: each weight tile once, every row tile of the block past it.
        for (int64_t j = 0; j < nn; ++j)
          for (int64_t t = 0; t < kn; ++t)
            for (int64_t i = 0; i < mm; ++i) {
              Command mul{Opcode::kMatmul};
              mul.a = u32(i * kM * a.cols + t * kK);
              mul.a_pitch = a.cols;
              mul.w = u32((t * nn + j) * kK * kN);  // tile (t, j) of the loaded block
              mul.acc = u32(i * kM * cols + j * kN);
              mul.acc_pitch = u32(cols);
              out.push_back(mul);
            }
      }
      Command st{Opcode::kStore};
      st.arg = 3;
      st.dram = static_cast<uint64_t>(m0 * kM * k.n + n0 * kN);
      st.rows = u32(rows);
      st.cols = u32(cols);
      st.stride = u32(k.n);
      st.shift = k.shift;
      st.relu = k.relu;
      out.push_back(st);
    }
  }
  return out;
}

}  // namespace kiln::mxu
