#pragma once
// Winograd's minimal filtering F(m x m, 3x3) (Lavin & Gray, "Fast Algorithms for
// Convolutional Neural Networks", CVPR 2016) for 3x3 stride-1 convolutions: each m x m
// tile of output is A^T [(G g G^T) . (B^T d B)] A from an (m + 2) x (m + 2) tile d of
// input: (m + 2)^2 multiplies per pair of channels where the direct form needs 9 m^2
// (F(2x2, 3x3): 16 for 36; F(4x4, 3x3): 36 for 144); the transforms are additions and
// multiplies by small constants. The matrices are written here only: the operator
// conv2d_winograd (ops_winograd.cc) computes B^T d B and A^T M A from them,
// transform_weight() G g G^T.
#include "compiler/graph/graph.h"

namespace kiln::graph::winograd {

inline constexpr int kKernel = 3;  // the filter (r)
// The tiles are padded to a multiple of this: the rows of the products' register tile
// (graph::schedule_matmul's, with 4 vectors of columns).
inline constexpr int kTileRows = 4;

struct Transform {
  int m;                // output tile
  int alpha;            // input tile: m + r - 1
  const double* bt;     // B^T, alpha x alpha
  const double* g;      // G, alpha x r
  const double* at;     // A^T, m x alpha
};
// F(m x m, 3x3) for m = 2 or 4; CompileError for another m.
const Transform& transform(int m);

// The tile the winograd_conv pass gives an output of oh x ow pixels: 4 where it divides
// both, else 2.
inline int default_tile(int64_t oh, int64_t ow) { return oh % 4 == 0 && ow % 4 == 0 ? 4 : 2; }

// The tiles of m x m pixels over n images of oh x ow (the last row and column of them
// partly outside), and the rows of conv2d_winograd's products: those tiles padded to a
// multiple of kTileRows.
inline int64_t tile_count(int64_t n, int64_t oh, int64_t ow, int m) { return n * ((oh + m - 1) / m) * ((ow + m - 1) / m); }
inline int64_t product_rows(int64_t tiles) { return (tiles + kTileRows - 1) / kTileRows * kTileRows; }

// A float convolution weight [O, C, 3, 3] transformed for conv2d_winograd with tile m:
// [alpha^2, C, O], element [alpha * xi + nu, c, o] = (G g G^T)[xi][nu] of filter
// g = weight[o, c].
ConstData transform_weight(const interp::HostBuffer& weight, int m);

}  // namespace kiln::graph::winograd
