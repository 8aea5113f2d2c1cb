// Paper-scale analog generators (see analogs.h for the three families and their layout).
#include "graph/analogs.h"

#include "graph/parallel.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "graph/rng.h"

namespace netsparse::graph {

namespace {

constexpr int64_t kGrain = 1 << 14;  // rows per parallel chunk

// Keys of the per-segment streams (rows use their own id as key, so these live above 2^62).
constexpr uint64_t kDestKey = 1ULL << 62, kPermKey = (1ULL << 62) + (1ULL << 40), kFarKey = 3ULL << 61;

// `count` distinct sorted values in [lo, lo + width), one uniform draw per stratum of width/count:
// distinct and sorted by construction, spread like a regular mesh (width >= count).
void stratified(int64_t lo, int64_t width, int64_t count, uint64_t& st, std::vector<int64_t>& out) {
  for (int64_t i = 0; i < count; ++i) {
    const int64_t a = lo + (i * width) / count, b = lo + ((i + 1) * width) / count;
    out.push_back(a + below(st, b - a));
  }
}

int64_t pick(const std::vector<double>& cum, double u) {
  const auto it = std::upper_bound(cum.begin(), cum.end(), u * cum.back());
  return std::min<int64_t>(it - cum.begin(), static_cast<int64_t>(cum.size()) - 1);
}

// Entries of a row from a real mean: floor(mean) plus one with probability frac(mean).
int64_t rounded(double mean, uint64_t& st) {
  const double f = std::floor(mean);
  return static_cast<int64_t>(f) + (uniform(st) < mean - f ? 1 : 0);
}

void sort_unique(std::vector<int64_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

AnalogGenerator::AnalogGenerator(const AnalogParams& p) : p_(p) {
  if (p.family != "web" && p.family != "road" && p.family != "fem")
    throw std::invalid_argument("analog: unknown family '" + p.family + "' (web, road, fem)");
  if (p.n < 1 || p.segments < 1 || p.segments > p.n)
    throw std::invalid_argument("analog: need 1 <= segments <= n");
  if (p.n - 1 > INT32_MAX) throw std::invalid_argument("analog: n exceeds int32 column ids");
  base_ = p.n / p.segments;
  extra_ = p.n % p.segments;
  const int64_t segs = p.segments;
  if (p.family == "web") {
    if (p.deg_xm <= 0 || p.deg_alpha <= 0 || p.deg_cap < 1 || p.popular_fraction <= 0 || p.dest_decay <= 0)
      throw std::invalid_argument("analog web: degree, popular_fraction and dest_decay must be positive");
    const int64_t m = std::max<int64_t>(1, std::min(p.dests, segs - 1));
    p_.dests = m;
    for (int64_t i = 0; i < m; ++i) dest_cum_.push_back((i ? dest_cum_.back() : 0.0) + std::pow(p.dest_decay, i));
    dest_.assign(segs * m, 0);
    std::vector<int64_t> others(segs);
    for (int64_t s = 0; s < segs; ++s) {  // m distinct other segments, partial Fisher-Yates
      std::iota(others.begin(), others.end(), 0);
      std::swap(others[s], others[segs - 1]);
      uint64_t st = stream(p.seed, kDestKey + s);
      for (int64_t i = 0; i < m && i < segs - 1; ++i) {
        std::swap(others[i], others[i + below(st, segs - 1 - i)]);
        dest_[s * m + i] = others[i];
      }
    }
    for (int64_t t = 0; t < segs; ++t) {  // popular rank -> row: an affine bijection of the segment
      const int64_t size = seg_size(t);
      uint64_t st = stream(p.seed, kPermKey + t);
      int64_t a = (below(st, size) | 1) % size;
      while (size > 1 && std::gcd(a, size) != 1) a = (a + 1) % size;
      perm_a_.push_back(size > 1 ? a : 0);
      perm_b_.push_back(below(st, size));
    }
  } else if (p.family == "road") {
    if (p.degree_probs.empty() || p.far_reach < 1 || p.far_decay <= 0 || p.far_fraction <= 0)
      throw std::invalid_argument("analog road: degree_probs, far_reach, far_decay, far_fraction invalid");
    for (double q : p.degree_probs) deg_cum_.push_back((deg_cum_.empty() ? 0.0 : deg_cum_.back()) + q);
    for (int64_t o = 1; o <= p.far_reach; ++o)
      for (int s = 0; s < 2; ++s) far_cum_.push_back((far_cum_.empty() ? 0.0 : far_cum_.back()) + std::pow(p.far_decay, o - 1));
    if (p.local_window < static_cast<int64_t>(p.degree_probs.size()))
      throw std::invalid_argument("analog road: local_window must be >= the largest degree");
  } else {
    if (p.band_entries < 0 || p.coupling_entries < 0 || p.band_width < 0 || p.coupling_width < 0)
      throw std::invalid_argument("analog fem: entries and widths must be >= 0");
  }
}

int64_t AnalogGenerator::seg_of(int64_t r) const {
  const int64_t big = extra_ * (base_ + 1);
  return r < big ? r / (base_ + 1) : extra_ + (r - big) / base_;
}

void AnalogGenerator::row(int64_t r, std::vector<int64_t>& out, std::vector<int64_t>& scratch) const {
  out.clear();
  scratch.clear();
  uint64_t st = stream(p_.seed, static_cast<uint64_t>(r));
  if (p_.family == "web") web_row(r, st, out, scratch);
  else if (p_.family == "road") road_row(r, st, out, scratch);
  else fem_row(r, st, out, scratch);
}

void AnalogGenerator::web_row(int64_t r, uint64_t& st, std::vector<int64_t>& out, std::vector<int64_t>& remote) const {
  const int64_t p = seg_of(r), s0 = seg_start(p), size = seg_size(p), x = r - s0;
  const double u = 1.0 - uniform(st);  // (0, 1]
  const int64_t cap = std::max<int64_t>(1, std::min(p_.deg_cap, size / 2));
  const double raw = std::floor(p_.deg_xm * std::pow(u, -1.0 / p_.deg_alpha));
  const int64_t d = std::clamp<int64_t>(raw > 1e15 ? cap : static_cast<int64_t>(raw), 1, cap);
  int64_t k = 0;
  if (p_.segments > 1)
    for (int64_t i = 0; i < d; ++i) k += uniform(st) < p_.remote_prob;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t t = dest_[p * p_.dests + pick(dest_cum_, uniform(st))];
    const int64_t ts = seg_size(t);
    const int64_t popular = std::clamp<int64_t>(std::llround(p_.popular_fraction * ts), 1, ts);
    const int64_t j = below(st, popular);
    remote.push_back(seg_start(t) + (j * perm_a_[t] + perm_b_[t]) % ts);
  }
  sort_unique(remote);
  const int64_t local = d - k;
  const int64_t width = std::min(size, std::max(p_.local_window, 2 * local));
  const int64_t lo = std::clamp<int64_t>(x - width / 2, 0, size - width);
  auto split = std::lower_bound(remote.begin(), remote.end(), s0);
  out.insert(out.end(), remote.begin(), split);
  stratified(s0 + lo, width, std::min(local, width), st, out);
  out.insert(out.end(), split, remote.end());
}

void AnalogGenerator::road_row(int64_t r, uint64_t& st, std::vector<int64_t>& out, std::vector<int64_t>& far) const {
  const int64_t segs = p_.segments, p = seg_of(r), s0 = seg_start(p), size = seg_size(p), x = r - s0;
  const int64_t d = pick(deg_cum_, uniform(st)) + 1;
  int64_t near = 0;
  for (int64_t i = 0; i < d; ++i) {
    if (segs > 1 && uniform(st) < p_.far_prob) {
      const int64_t idx = pick(far_cum_, uniform(st));
      const int64_t off = (idx / 2 + 1) * (idx % 2 ? -1 : 1);
      const int64_t t = ((p + off) % segs + segs) % segs;
      if (t != p) {
        const int64_t ts = seg_size(t);
        const int64_t width = std::clamp<int64_t>(std::llround(p_.far_fraction * ts), 1, ts);
        const int64_t start = static_cast<int64_t>(mix64(stream(p_.seed, kFarKey + p * segs + t)) % ts);
        far.push_back(seg_start(t) + (start + below(st, width)) % ts);
        continue;
      }
    }
    ++near;
  }
  sort_unique(far);
  const int64_t width = std::min(size, p_.local_window);
  const int64_t lo = std::clamp<int64_t>(x - width / 2, 0, size - width);
  auto split = std::lower_bound(far.begin(), far.end(), s0);
  out.insert(out.end(), far.begin(), split);
  stratified(s0 + lo, width, std::min(near, width), st, out);
  out.insert(out.end(), split, far.end());
}

void AnalogGenerator::fem_row(int64_t r, uint64_t& st, std::vector<int64_t>& out, std::vector<int64_t>& band) const {
  const int64_t n = p_.n, p = seg_of(r), s0 = seg_start(p), size = seg_size(p), x = r - s0;
  const int64_t g0 = rounded(p_.band_entries, st), g1 = rounded(p_.coupling_entries, st);
  // Local band around the diagonal, clipped to the matrix.
  const int64_t h0 = std::max<int64_t>(std::llround(p_.band_width * size), g0 / 2);  // 2 h + 1 >= g
  const int64_t lo0 = std::max<int64_t>(0, r - h0), hi0 = std::min(n, r + h0 + 1);
  stratified(lo0, hi0 - lo0, std::min(g0, hi0 - lo0), st, band);
  // Coupling band: below the segment for its first half, above it for the second half; flipped at
  // the ends of the matrix.
  const int64_t h1 = std::max<int64_t>(std::llround(p_.coupling_width * size), g1 / 2);
  const double mid = s0 + 0.5 * size + p_.sweep * (x + 0.5 - 0.5 * size);
  double sign = 2 * x < size ? -1.0 : 1.0;
  int64_t c = std::llround(mid + sign * p_.jump * size);
  if (c - h1 < 0 || c + h1 + 1 > n) c = std::llround(mid - sign * p_.jump * size);
  const int64_t lo1 = std::clamp<int64_t>(c - h1, 0, n - 1), hi1 = std::clamp<int64_t>(c + h1 + 1, lo1 + 1, n);
  const size_t mid_at = band.size();
  stratified(lo1, hi1 - lo1, std::min(g1, hi1 - lo1), st, band);
  out.resize(band.size());
  std::merge(band.begin(), band.begin() + mid_at, band.begin() + mid_at, band.end(), out.begin());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

void generate_counts(const AnalogGenerator& g, int64_t begin, int64_t end, int64_t* indptr) {
  indptr[0] = 0;
  parallel_chunks(end - begin, kGrain, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> row, scratch;
    for (int64_t i = lo; i < hi; ++i) {
      g.row(begin + i, row, scratch);
      indptr[i + 1] = static_cast<int64_t>(row.size());
    }
  });
  for (int64_t i = 0; i < end - begin; ++i) indptr[i + 1] += indptr[i];
}

void generate_fill(const AnalogGenerator& g, int64_t begin, int64_t end, const int64_t* indptr, int32_t* indices) {
  parallel_chunks(end - begin, kGrain, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> row, scratch;
    for (int64_t i = lo; i < hi; ++i) {
      g.row(begin + i, row, scratch);
      if (static_cast<int64_t>(row.size()) != indptr[i + 1] - indptr[i])
        throw std::logic_error("analog: a row came out different in the second pass");
      std::copy(row.begin(), row.end(), indices + indptr[i]);
    }
  });
}

void row_degrees(const AnalogGenerator& g, const int64_t* ids, int64_t count, int64_t* nnz, uint8_t* loop) {
  parallel_chunks(count, kGrain, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> row, scratch;
    for (int64_t i = lo; i < hi; ++i) {
      g.row(ids[i], row, scratch);
      nnz[i] = static_cast<int64_t>(row.size());
      loop[i] = std::binary_search(row.begin(), row.end(), ids[i]) ? 1 : 0;
    }
  });
}

namespace {
// Salts that keep the node data's streams apart from the rows' (same seed, same row id).
constexpr uint64_t kNormalSalt = 0x6E6F726D616C2D78ULL, kUniformSalt = 0x756E69666F726D2DULL;
}  // namespace

void keyed_normal(uint64_t seed, const int64_t* ids, int64_t count, int64_t k, float* out) {
  parallel_chunks(count, kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      uint64_t st = stream(seed ^ kNormalSalt, static_cast<uint64_t>(ids[i]));
      float* x = out + i * k;
      for (int64_t j = 0; j < k; j += 2) {
        const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform(st)));  // 1 - u in (0, 1]
        const double angle = 2.0 * M_PI * uniform(st);
        x[j] = static_cast<float>(radius * std::cos(angle));
        if (j + 1 < k) x[j + 1] = static_cast<float>(radius * std::sin(angle));
      }
    }
  });
}

void keyed_uniform(uint64_t seed, const int64_t* ids, int64_t count, double* out) {
  parallel_chunks(count, kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      uint64_t st = stream(seed ^ kUniformSalt, static_cast<uint64_t>(ids[i]));
      out[i] = uniform(st);
    }
  });
}

}  // namespace netsparse::graph
