#pragma once
// Two-Face row panels (Two-Face §4.2): the synchronous and local-input parts of the matrix are
// stored row-major in panels of 32 rows, and inside a panel grouped by stripe of W columns. One
// panel's output rows stay in cache while the rows of B of one stripe are reused by all its rows.
#include <ATen/ATen.h>

namespace netsparse {

// out = A x B for A given as panels: panel q covers rows [q*panel_rows, (q+1)*panel_rows) and owns
// the nonzeros panel_ptr[q]..panel_ptr[q+1]-1, each with its absolute row, column and value, in
// any order inside the panel (the caller sorts them by stripe, then row). Panels run in parallel.
at::Tensor spmm_panels(const at::Tensor& panel_ptr, const at::Tensor& row, const at::Tensor& col,
                       const at::Tensor& val, const at::Tensor& B, int64_t n_rows, int64_t panel_rows);

}  // namespace netsparse
