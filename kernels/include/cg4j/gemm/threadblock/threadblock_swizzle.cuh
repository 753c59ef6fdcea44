// cudagraph4j kernels: threadblock swizzles (which output tile a block computes).
//
// The launch grid is always grid.x = ceil(M / kM) tiles along M, grid.y = ceil(N / kN) tiles
// along N. A swizzle only permutes which tile each block of that grid takes; blocks whose tile
// falls outside the problem (a grid larger than needed) do nothing.
#pragma once

namespace cg4j {
namespace gemm {
namespace threadblock {

/// Tile (blockIdx.x, blockIdx.y).
struct GemmIdentityThreadblockSwizzle {
  __device__ __forceinline__ static void get_tile_offset(int &tile_m, int &tile_n) {
    tile_m = blockIdx.x;
    tile_n = blockIdx.y;
  }
};

/// Blocks, in launch order (x fastest), walk groups of GroupM tile rows column by column, so
/// the blocks resident at one time share A rows and B columns in L2. A bijection on the grid.
template <int GroupM>
struct GemmGroupedThreadblockSwizzle {
  __device__ __forceinline__ static void get_tile_offset(int &tile_m, int &tile_n) {
    const long long grid_m = gridDim.x;
    const long long grid_n = gridDim.y;
    const long long pid = (long long)blockIdx.y * grid_m + blockIdx.x;
    const long long group_size = GroupM * grid_n;
    const long long group = pid / group_size;
    const long long first_m = group * GroupM;
    const long long rows = (grid_m - first_m < GroupM) ? (grid_m - first_m) : GroupM;
    const long long in_group = pid - group * group_size;
    tile_m = (int)(first_m + in_group % rows);
    tile_n = (int)(in_group / rows);
  }
};

}  // namespace threadblock
}  // namespace gemm
}  // namespace cg4j
