// stats=links (see link_stats.h).
#include "sim/link_stats.h"

#include <algorithm>
#include <string>
#include <utility>

#include "units/errors.h"

namespace netsparse::sim {

namespace {
// A fixed width too fine for the run: bins x links cells of five int64 arrays stay under 160 MiB.
constexpr int64_t kMaxCells = int64_t{1} << 22;
}  // namespace

LinkStats::LinkStats(int64_t links, int64_t bin_ps) : automatic_(bin_ps == kLinkStatsAuto) {
  if (!automatic_ && bin_ps <= 0)
    throw units::ConfigInvalid("simulator: link statistics need a bin width > 0 ps, got " + std::to_string(bin_ps));
  r_.bin_ps = automatic_ ? kFirstBinPs : bin_ps;
  r_.links = links;
  q_len_.assign(static_cast<size_t>(links), 0);
  q_since_.assign(static_cast<size_t>(links), 0);
}

int64_t LinkStats::bin(int64_t t) {
  int64_t b = t / r_.bin_ps;
  while (automatic_ && b >= kMaxBins) {
    coarsen();
    b = t / r_.bin_ps;
  }
  if ((b + 1) * r_.links > kMaxCells)
    throw units::ConfigInvalid("simulator: stats=links would need over " + std::to_string(b) + " bins of " +
                               std::to_string(r_.bin_ps) + " ps for " + std::to_string(r_.links) +
                               " links in this run (at most " + std::to_string(kMaxCells) +
                               " cells); give a wider bin");
  if (b >= r_.bins) {
    r_.bins = b + 1;
    const size_t n = static_cast<size_t>(r_.bins * r_.links);
    for (auto* v : {&r_.busy_ps, &r_.bytes, &r_.packets, &r_.queue_ps, &r_.queue_max}) v->resize(n, 0);
  }
  return b;
}

// Bins 2i and 2i + 1 become bin i of twice the width.
void LinkStats::coarsen() {
  const int64_t bins = (r_.bins + 1) / 2, links = r_.links;
  for (int64_t i = 0; i < bins; ++i) {
    const bool pair = 2 * i + 1 < r_.bins;
    for (int64_t l = 0; l < links; ++l) {
      for (auto* v : {&r_.busy_ps, &r_.bytes, &r_.packets, &r_.queue_ps}) {
        int64_t& dst = (*v)[i * links + l];
        dst = (*v)[2 * i * links + l] + (pair ? (*v)[(2 * i + 1) * links + l] : 0);
      }
      int64_t& m = r_.queue_max[i * links + l];
      m = std::max(r_.queue_max[2 * i * links + l], pair ? r_.queue_max[(2 * i + 1) * links + l] : 0);
    }
  }
  r_.bins = bins;
  for (auto* v : {&r_.busy_ps, &r_.bytes, &r_.packets, &r_.queue_ps, &r_.queue_max})
    v->resize(static_cast<size_t>(bins * links));
  r_.bin_ps *= 2;
}

void LinkStats::busy(int64_t link, int64_t t0, int64_t t1, int64_t wire) {
  bin(std::max(t0, t1 - 1));  // the last bin first: the width is final for this call
  const int64_t b0 = bin(t0);
  *at(r_.packets, b0, link) += 1;
  *at(r_.bytes, b0, link) += wire;
  while (t0 < t1) {
    const int64_t b = t0 / r_.bin_ps, end = std::min(t1, (b + 1) * r_.bin_ps);
    *at(r_.busy_ps, b, link) += end - t0;
    t0 = end;
  }
}

void LinkStats::queue(int64_t link, int64_t t, int64_t delta) {
  int64_t& len = q_len_[link];
  int64_t& since = q_since_[link];
  if (len > 0 && t > since) {  // the length held over [since, t)
    bin(t - 1);
    for (int64_t s = since; s < t;) {
      const int64_t b = s / r_.bin_ps, end = std::min(t, (b + 1) * r_.bin_ps);
      *at(r_.queue_ps, b, link) += len * (end - s);
      int64_t& m = *at(r_.queue_max, b, link);
      m = std::max(m, len);
      s = end;
    }
  }
  len += delta;
  since = t;
}

LinkStatsResult LinkStats::finish() { return std::move(r_); }

}  // namespace netsparse::sim
