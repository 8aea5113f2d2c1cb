// Generators of paper-scale analogs of NetSparse Table 6 matrices (fit: docs/experiments.md).
//
// Each writes a canonical CSR pattern (columns ascending within a row, no duplicates, int32 column
// ids) row by row: a first pass generates every row to count it, a prefix sum makes indptr, a second
// pass generates each row again straight into its slot. Every random draw of row r comes from a
// counter-based stream keyed on (seed, r), so the output is identical for any thread count.
//
// The matrix is laid out in `segments` contiguous row blocks of numpy.array_split sizes (128: the
// node blocks of the paper's 128-node partition=rows); every position and width is a fraction of the
// segment size, so a scaled-down analog keeps the statistics of the full one. Families:
//   web  (arabic, uk): heavy-tailed degrees; local entries in a window around the diagonal inside
//        the row's segment (URL order); remote entries go to a few destination segments per segment
//        (geometric weights) and there to that segment's popular rows (a shared top fraction).
//   road (europe): 1-4 neighbours near the diagonal; a few far entries to nearby segments (wrapping),
//        each in a region of the destination segment picked per (source, destination) pair.
//   fem  (queen, stokes): a local band around the diagonal plus one coupling band whose centre
//        sweeps `sweep` columns per row and sits `jump` segments below (first half of a segment) or
//        above (second half) the row's own segment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace netsparse::graph {

struct AnalogParams {
  std::string family;  // "web" | "road" | "fem"
  int64_t n = 0;
  int64_t segments = 128;
  uint64_t seed = 0;
  // web
  double deg_xm = 1, deg_alpha = 2;  // degree = floor(xm * u^(-1/alpha)), u ~ U(0, 1]
  int64_t deg_cap = 10000;           // and at most min(deg_cap, segment rows / 2)
  double remote_prob = 0;            // each entry is remote with this probability
  int64_t dests = 1;                 // destination segments per segment
  double dest_decay = 1;             // weight of the i-th destination ~ dest_decay^i
  double popular_fraction = 0.1;     // remote entries pick uniformly among this share of a segment's rows
  // road
  std::vector<double> degree_probs;  // P(degree = 1), P(degree = 2), ...
  double far_prob = 0;               // each entry is far with this probability
  int64_t far_reach = 1;             // far entries go to segments p +- 1 .. p +- far_reach
  double far_decay = 1;              // weight of offset o ~ far_decay^(|o| - 1)
  double far_fraction = 1;           // width of the far region in a destination segment (share of its rows)
  int64_t local_window = 32;         // web and road: rows of the window around the diagonal
  // fem
  double band_entries = 0, band_width = 0;          // local band: entries per row, half-width / segment rows
  double coupling_entries = 0, coupling_width = 0;  // coupling band: entries per row, half-width / segment rows
  double sweep = 1, jump = 0.5;                     // coupling centre: columns per row, offset / segment rows
};

class AnalogGenerator {
 public:
  explicit AnalogGenerator(const AnalogParams& p);
  // Sorted distinct columns of row r into out (cleared first).
  void row(int64_t r, std::vector<int64_t>& out, std::vector<int64_t>& scratch) const;
  int64_t seg_start(int64_t s) const { return s * base_ + (s < extra_ ? s : extra_); }
  int64_t seg_size(int64_t s) const { return base_ + (s < extra_ ? 1 : 0); }
  int64_t seg_of(int64_t r) const;

 private:
  void web_row(int64_t r, uint64_t& st, std::vector<int64_t>& out, std::vector<int64_t>& scratch) const;
  void road_row(int64_t r, uint64_t& st, std::vector<int64_t>& out, std::vector<int64_t>& scratch) const;
  void fem_row(int64_t r, uint64_t& st, std::vector<int64_t>& out, std::vector<int64_t>& scratch) const;

  AnalogParams p_;
  int64_t base_ = 0, extra_ = 0;
  std::vector<int64_t> dest_;      // web: [segments x dests] destination segments
  std::vector<double> dest_cum_;   // web: cumulative destination weights (dests)
  std::vector<int64_t> perm_a_, perm_b_;  // web: popular rank j of segment t -> row (j * a + b) mod size
  std::vector<double> far_cum_;    // road: cumulative weights of offsets +-1..+-reach (2 * reach)
  std::vector<double> deg_cum_;    // road: cumulative degree probabilities
};

// Generates rows [begin, end) of the analog: indptr (int64, end - begin + 1, starting at 0) and
// indices (int32) are allocated by the caller once the counts are known, so no second copy is ever
// made. The whole matrix is the range [0, n); any range holds exactly those rows of it.
void generate_counts(const AnalogGenerator& g, int64_t begin, int64_t end, int64_t* indptr);
void generate_fill(const AnalogGenerator& g, int64_t begin, int64_t end, const int64_t* indptr, int32_t* indices);

// Nonzeros of the rows ids[i] (any order) and whether each holds its diagonal entry: the degree
// information a normalisation needs for a rank's halo, without the rows themselves.
void row_degrees(const AnalogGenerator& g, const int64_t* ids, int64_t count, int64_t* nnz, uint8_t* loop);

// Node data keyed on (seed, row) like the rows: k standard normals per row (Box-Muller, float32) and
// one uniform in [0, 1) per row, so any rank draws the same values for a row as a whole-graph run.
void keyed_normal(uint64_t seed, const int64_t* ids, int64_t count, int64_t k, float* out);
void keyed_uniform(uint64_t seed, const int64_t* ids, int64_t count, double* out);

}  // namespace netsparse::graph
