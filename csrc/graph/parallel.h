#pragma once
// parallel_chunks: the graph generators' one parallel loop, on OpenMP (hw_models._C links no torch, so
// not at::parallel_for). [0, n) is cut into at most one chunk per thread, each of at least `grain`
// items; the first exception thrown in a chunk is rethrown here (OpenMP would terminate on it).
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>

namespace netsparse::graph {

template <class F>
void parallel_chunks(int64_t n, int64_t grain, const F& f) {
  if (n <= 0) return;
  const int64_t chunks = std::clamp<int64_t>((n + grain - 1) / std::max<int64_t>(grain, 1), 1, omp_get_max_threads());
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static, 1)
  for (int64_t c = 0; c < chunks; ++c) {
    try {
      f(n * c / chunks, n * (c + 1) / chunks);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace netsparse::graph
