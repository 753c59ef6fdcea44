// cudagraph4j kernels: global-memory layouts of the B operand.
//
// Letters follow CUTLASS/BLAS: 't' = row-major, 'n' = column-major. Every matrix the kernels
// take is described as its logical shape plus a leading dimension:
//   A  M x K, row-major ('t'):          A(m,k) = A[m*lda + k]
//   B  K x N, row-major ('t'):          B(k,n) = B[k*ldb + n]        (plain C = A*B)
//   B  K x N, column-major ('n'):       B(k,n) = B[n*ldb + k]        (B stored [N,K]: y = x*W^T)
//   C/D M x N, row-major ('t'):         C(m,n) = C[m*ldc + n]
#pragma once

namespace cg4j {
namespace layout {

struct RowMajor {
  static constexpr char kLetter = 't';
};
struct ColumnMajor {
  static constexpr char kLetter = 'n';
};

}  // namespace layout
}  // namespace cg4j
