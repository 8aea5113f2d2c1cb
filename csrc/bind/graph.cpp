// Python bindings of the paper-scale analog generators and the streaming workload statistics
// -> hw_models._C.graph. Called by hw_models/analogs.py and hw_models/definitions.py.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "bind/bindings.h"
#include "graph/analogs.h"
#include "graph/node_stats.h"
#include "units/errors.h"

namespace py = pybind11;
using netsparse::units::ConfigInvalid;
using namespace netsparse::graph;

namespace {

template <class T>
void set(const py::dict& d, const char* k, T& field) {
  if (d.contains(k)) field = d[k].cast<T>();
}

AnalogParams params_from(const std::string& family, int64_t n, uint64_t seed, const py::dict& d) {
  static const char* known[] = {"segments", "deg_xm", "deg_alpha", "deg_cap", "remote_prob", "dests", "dest_decay",
                                "popular_fraction", "degree_probs", "far_prob", "far_reach", "far_decay",
                                "far_fraction", "local_window", "band_entries", "band_width", "coupling_entries",
                                "coupling_width", "sweep", "jump"};
  for (auto item : d) {
    const std::string k = item.first.cast<std::string>();
    bool ok = false;
    for (const char* name : known) ok = ok || k == name;
    if (!ok) throw ConfigInvalid("analog: unknown parameter '" + k + "'");
  }
  AnalogParams p;
  p.family = family;
  p.n = n;
  p.seed = seed;
  set(d, "segments", p.segments);
  set(d, "deg_xm", p.deg_xm);
  set(d, "deg_alpha", p.deg_alpha);
  set(d, "deg_cap", p.deg_cap);
  set(d, "remote_prob", p.remote_prob);
  set(d, "dests", p.dests);
  set(d, "dest_decay", p.dest_decay);
  set(d, "popular_fraction", p.popular_fraction);
  set(d, "degree_probs", p.degree_probs);
  set(d, "far_prob", p.far_prob);
  set(d, "far_reach", p.far_reach);
  set(d, "far_decay", p.far_decay);
  set(d, "far_fraction", p.far_fraction);
  set(d, "local_window", p.local_window);
  set(d, "band_entries", p.band_entries);
  set(d, "band_width", p.band_width);
  set(d, "coupling_entries", p.coupling_entries);
  set(d, "coupling_width", p.coupling_width);
  set(d, "sweep", p.sweep);
  set(d, "jump", p.jump);
  return p;
}

py::tuple generate(const std::string& family, int64_t n, uint64_t seed, const py::dict& params) {
  const AnalogGenerator g(params_from(family, n, seed, params));
  py::array_t<int64_t> indptr(n + 1);
  int64_t* ip = indptr.mutable_data();
  {
    py::gil_scoped_release nogil;
    generate_counts(g, n, ip);
  }
  py::array_t<int32_t> indices(ip[n]);
  int32_t* ix = indices.mutable_data();
  {
    py::gil_scoped_release nogil;
    generate_fill(g, n, ip, ix);
  }
  return py::make_tuple(indptr, indices);
}

py::array_t<int64_t> as_array(const std::vector<int64_t>& v, int64_t rows, int64_t cols) {
  py::array_t<int64_t> a({rows, cols});
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

using I64 = py::array_t<int64_t, py::array::c_style>;

py::dict stats(const I64& indptr, const py::array& indices, int64_t n_cols, const I64& rb, const I64& cb,
               int64_t cores, int64_t window, const std::string& rank_partition) {
  const int64_t nodes = rb.size() - 1;
  if (rank_partition != "rows" && rank_partition != "nnz")
    throw ConfigInvalid("node_stats: set rank_partition (software.rank_partition) to 'rows' or 'nnz', not '" +
                        rank_partition + "'");
  const RankPartition split = rank_partition == "nnz" ? RankPartition::kNnz : RankPartition::kRows;
  if (nodes < 1 || cb.size() != rb.size()) throw ConfigInvalid("node_stats: row_bounds and col_bounds differ");
  if (indptr.size() != rb.at(nodes) + 1) throw ConfigInvalid("node_stats: indptr does not match row_bounds");
  if (!(indices.flags() & py::array::c_style)) throw ConfigInvalid("node_stats: indices must be contiguous");
  NodeStats s;
  {
    py::gil_scoped_release nogil;
    if (indices.dtype().is(py::dtype::of<int32_t>()))
      s = node_stats(indptr.data(), static_cast<const int32_t*>(indices.data()), n_cols, rb.data(), cb.data(), nodes,
                     cores, window, split);
    else if (indices.dtype().is(py::dtype::of<int64_t>()))
      s = node_stats(indptr.data(), static_cast<const int64_t*>(indices.data()), n_cols, rb.data(), cb.data(), nodes,
                     cores, window, split);
    else
      throw ConfigInvalid("node_stats: indices must be int32 or int64");
  }
  py::dict out;
  out["pair_prs"] = as_array(s.pair_prs, nodes, nodes);
  out["pair_useful"] = as_array(s.pair_useful, nodes, nodes);
  out["rank_pair_useful"] = as_array(s.rank_pair_useful, nodes, nodes);
  out["rank_issued"] = as_array(s.rank_issued, nodes, cores);
  out["rank_served"] = as_array(s.rank_served, nodes, cores);
  out["node_nnz"] = as_array(s.node_nnz, 1, nodes).attr("ravel")();
  out["node_distinct"] = as_array(s.node_distinct, 1, nodes).attr("ravel")();
  out["windows"] = as_array(s.windows, 1, nodes).attr("ravel")();
  out["window_distinct"] = as_array(s.window_distinct, 1, nodes).attr("ravel")();
  return out;
}

}  // namespace

void bind_graph(py::module_& m) {
  m.def("generate_analog", &generate,
        "Paper-scale analog pattern (family web|road|fem): (indptr int64[n+1], indices int32[nnz]), canonical",
        py::arg("family"), py::arg("n"), py::arg("seed"), py::arg("params"));
  m.def("node_stats", &stats,
        "Per-node workload statistics of a canonical CSR pattern in one streaming pass (hw_models.definitions)",
        py::arg("indptr"), py::arg("indices"), py::arg("n_cols"), py::arg("row_bounds"), py::arg("col_bounds"),
        py::arg("cores"), py::arg("window"), py::arg("rank_partition") = "rows");
}
