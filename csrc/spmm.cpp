#include "spmm.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "spmm_isa.h"
#include "units/errors.h"

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace netsparse {
namespace {

void check_csr(const char* op, const at::Tensor& crow, const at::Tensor& col, const at::Tensor& val) {
  TORCH_CHECK_VALUE(crow.dim() == 1 && crow.numel() >= 1, op, ": crow must be 1-D with rows+1 entries");
  TORCH_CHECK_VALUE(crow.scalar_type() == at::kLong && col.scalar_type() == at::kLong, op,
                    ": crow and col must be int64");
  TORCH_CHECK_VALUE(col.dim() == 1 && val.dim() == 1 && col.numel() == val.numel(), op,
                    ": col and val must be 1-D of equal length");
  TORCH_CHECK_VALUE(crow.is_contiguous() && col.is_contiguous() && val.is_contiguous(), op,
                    ": crow, col and val must be contiguous");
  TORCH_CHECK_VALUE(crow.device().is_cpu() && col.device().is_cpu() && val.device().is_cpu(), op,
                    ": the C++ kernel runs on CPU tensors");
  // One pass over the row pointers (rows x 8 bytes, small next to the product) so that a corrupt
  // crow is an error instead of an out-of-bounds read.
  const int64_t* p = crow.data_ptr<int64_t>();
  const int64_t rows = crow.numel() - 1;
  TORCH_CHECK_VALUE(p[0] == 0 && p[rows] == col.numel(), op, ": crow must run from 0 to nnz=", col.numel(),
                    ", got ", p[0], "..", p[rows]);
  for (int64_t r = 0; r < rows; ++r)
    TORCH_CHECK_VALUE(p[r] <= p[r + 1], op, ": crow decreases at row ", r);
}

// Chunk boundaries (in rows) holding about equal numbers of nonzeros.
std::vector<int64_t> nnz_balanced_chunks(const int64_t* crow, int64_t rows, int64_t chunks) {
  const int64_t nnz = crow[rows];
  std::vector<int64_t> bounds(chunks + 1, rows);
  bounds[0] = 0;
  for (int64_t c = 1; c < chunks; ++c) {
    const int64_t target = nnz * c / chunks;
    bounds[c] = std::lower_bound(crow, crow + rows + 1, target) - crow;
    bounds[c] = std::max(bounds[c], bounds[c - 1]);
  }
  return bounds;
}

// A large fresh output costs one page fault per 4 KiB on first touch, which at K=128 takes longer
// than the product itself (measured: 51 MB of float32 rows, ~14 ms of faults vs ~4 ms to write).
// Asking for transparent huge pages on the 2 MiB-aligned interior of this tensor's own buffer cuts
// the faults 512-fold. Linux only; a no-op when THP is off or the pages are already mapped.
void advise_huge_pages(void* ptr, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 2 * kHuge) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(ptr) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(ptr) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // advisory only
#else
  (void)ptr;
  (void)bytes;
#endif
}

enum class Isa { generic = 0, avx2 = 1, avx512 = 2 };

Isa parse_isa(const std::string& name) {
  if (name == "generic") return Isa::generic;
  if (name == "avx2") return Isa::avx2;
  if (name == "avx512") return Isa::avx512;
  throw netsparse::units::ConfigInvalid("spmm: unknown isa '" + name + "'; choose auto, avx512, avx2 or generic");
}

Isa detect_isa() {
  Isa best = Isa::generic;
#ifdef NETSPARSE_HAVE_X86_ISA
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = Isa::avx2;
  if (best == Isa::avx2 && __builtin_cpu_supports("avx512f")) best = Isa::avx512;
#endif
  if (const char* cap = std::getenv("NETSPARSE_CPU_ISA")) {
    if (*cap != '\0' && std::string(cap) != "auto") best = std::min(best, parse_isa(cap));
  }
  return best;
}

const char* isa_name(Isa isa) {
  return isa == Isa::avx512 ? "avx512" : isa == Isa::avx2 ? "avx2" : "generic";
}

template <typename T>
using RowsFn = bool (*)(const int64_t*, const int64_t*, const T*, const T*, int64_t, int64_t, int64_t, T*,
                        int64_t, int64_t, int64_t);

template <typename T>
RowsFn<T> rows_kernel(Isa isa) {
#ifdef NETSPARSE_HAVE_X86_ISA
  if (isa == Isa::avx512) return &isa::spmm_rows_avx512;
  if (isa == Isa::avx2) return &isa::spmm_rows_avx2;
#endif
  (void)isa;
  return &isa::spmm_rows_generic;
}

Isa resolve_isa(const std::string& name) {
  const Isa best = detect_isa();
  if (name == "auto") return best;
  const Isa want = parse_isa(name);
  if (want > best)
    throw netsparse::units::ConfigInvalid(std::string("spmm: isa '") + name + "' is not available here (best: " +
                                isa_name(best) + ")");
  return want;
}

}  // namespace

std::string cpu_isa() { return isa_name(detect_isa()); }

at::Tensor spmm(const at::Tensor& crow, const at::Tensor& col, const at::Tensor& val, const at::Tensor& B_in,
                const std::string& isa_name_in) {
  check_csr("spmm", crow, col, val);
  TORCH_CHECK_VALUE(B_in.dim() == 2, "spmm: B must be 2-D, got ", B_in.dim(), "-D");
  TORCH_CHECK_VALUE(B_in.device().is_cpu(), "spmm: the C++ kernel runs on CPU tensors");
  TORCH_CHECK_VALUE(val.scalar_type() == B_in.scalar_type(), "spmm: val dtype ", val.scalar_type(),
                    " differs from B dtype ", B_in.scalar_type());
  TORCH_CHECK_VALUE(B_in.scalar_type() == at::kFloat || B_in.scalar_type() == at::kDouble,
                    "spmm: float32 or float64 expected, got ", B_in.scalar_type());
  const Isa isa = resolve_isa(isa_name_in);
  // A column slice of a row-major matrix is read in place; any other layout is copied once.
  const at::Tensor B = (B_in.size(1) <= 1 || B_in.stride(1) == 1) ? B_in : B_in.contiguous();
  const int64_t rows = crow.numel() - 1, K = B.size(1), b_rows = B.size(0);
  const int64_t ldb = B.stride(0);  // also for K = 1: a one-column slice keeps its row stride
  // Every row, even an empty one, is written in full by the kernel, so no zero fill is needed.
  at::Tensor out = at::empty({rows, K}, B.options().memory_format(at::MemoryFormat::Contiguous));
  if (rows == 0 || K == 0) return out.zero_();
  advise_huge_pages(out.data_ptr(), out.nbytes());
  const int64_t* crow_p = crow.data_ptr<int64_t>();
  const int64_t workers = at::get_num_threads();
  const int64_t chunks = std::min<int64_t>(rows, 16 * workers);
  const auto bounds = nnz_balanced_chunks(crow_p, rows, chunks);
  std::atomic<bool> bad_index{false};
  // Workers take the next chunk from a shared counter instead of a fixed half each: equal nonzero
  // counts are not equal times (cache hits differ between parts of a graph), and a worker that the
  // OS delays leaves its chunks to the others.
  std::atomic<int64_t> next_chunk{0};
  AT_DISPATCH_FLOATING_TYPES(B.scalar_type(), "netsparse_spmm", [&] {
    const RowsFn<scalar_t> kernel = rows_kernel<scalar_t>(isa);
    const scalar_t* val_p = val.data_ptr<scalar_t>();
    const scalar_t* b_p = B.data_ptr<scalar_t>();
    scalar_t* out_p = out.data_ptr<scalar_t>();
    const int64_t* col_p = col.data_ptr<int64_t>();
    at::parallel_for(0, workers, 1, [&](int64_t, int64_t) {
      for (int64_t c = next_chunk.fetch_add(1, std::memory_order_relaxed); c < chunks;
           c = next_chunk.fetch_add(1, std::memory_order_relaxed))
        if (kernel(crow_p, col_p, val_p, b_p, ldb, b_rows, K, out_p, K, bounds[c], bounds[c + 1]))
          bad_index.store(true, std::memory_order_relaxed);
    });
  });
  TORCH_CHECK_VALUE(!bad_index.load(), "spmm: a column index is outside [0, ", b_rows, ")");
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> csr_transpose(const at::Tensor& crow, const at::Tensor& col,
                                                             const at::Tensor& val, int64_t n_cols) {
  check_csr("csr_transpose", crow, col, val);
  TORCH_CHECK_VALUE(n_cols >= 0, "csr_transpose: n_cols must be >= 0");
  const int64_t rows = crow.numel() - 1, nnz = col.numel();
  at::Tensor t_crow = at::zeros({n_cols + 1}, crow.options());
  at::Tensor t_col = at::empty({nnz}, col.options());
  at::Tensor t_val = at::empty({nnz}, val.options());
  const int64_t* crow_p = crow.data_ptr<int64_t>();
  const int64_t* col_p = col.data_ptr<int64_t>();
  int64_t* tc = t_crow.data_ptr<int64_t>();
  for (int64_t p = 0; p < nnz; ++p) {
    TORCH_CHECK_VALUE(col_p[p] >= 0 && col_p[p] < n_cols, "csr_transpose: column ", col_p[p], " outside [0, ",
                      n_cols, ")");
    ++tc[col_p[p] + 1];
  }
  for (int64_t c = 0; c < n_cols; ++c) tc[c + 1] += tc[c];
  // Rows are visited in order, so each transposed row lists its columns sorted (a valid CSR).
  std::vector<int64_t> next(tc, tc + n_cols);
  int64_t* out_col = t_col.data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES(val.scalar_type(), "netsparse_csr_transpose", [&] {
    const scalar_t* v = val.data_ptr<scalar_t>();
    scalar_t* out_val = t_val.data_ptr<scalar_t>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t p = crow_p[r]; p < crow_p[r + 1]; ++p) {
        const int64_t dst = next[col_p[p]]++;
        out_col[dst] = r;
        out_val[dst] = v[p];
      }
  });
  return {t_crow, t_col, t_val};
}

}  // namespace netsparse
