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

py::tuple generate_rows(const std::string& family, int64_t n, uint64_t seed, const py::dict& params, int64_t begin,
                        int64_t end) {
  if (begin < 0 || end > n || begin > end) throw ConfigInvalid("analog: rows [begin, end) must lie in [0, n)");
  const AnalogGenerator g(params_from(family, n, seed, params));
  py::array_t<int64_t> indptr(end - begin + 1);
  int64_t* ip = indptr.mutable_data();
  {
    py::gil_scoped_release nogil;
    generate_counts(g, begin, end, ip);
  }
  py::array_t<int32_t> indices(ip[end - begin]);
  int32_t* ix = indices.mutable_data();
  {
    py::gil_scoped_release nogil;
    generate_fill(g, begin, end, ip, ix);
  }
  return py::make_tuple(indptr, indices);
}

py::tuple generate(const std::string& family, int64_t n, uint64_t seed, const py::dict& params) {
  return generate_rows(family, n, seed, params, 0, n);
}

using Ids = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

py::tuple degrees(const std::string& family, int64_t n, uint64_t seed, const py::dict& params, const Ids& ids) {
  const AnalogGenerator g(params_from(family, n, seed, params));
  const int64_t count = ids.size();
  const int64_t* id = ids.data();
  for (int64_t i = 0; i < count; ++i)
    if (id[i] < 0 || id[i] >= n) throw ConfigInvalid("analog: row id outside [0, n)");
  py::array_t<int64_t> nnz(count);
  py::array_t<bool> loop(count);
  int64_t* out_nnz = nnz.mutable_data();
  auto* out_loop = reinterpret_cast<uint8_t*>(loop.mutable_data());
  {
    py::gil_scoped_release nogil;
    row_degrees(g, id, count, out_nnz, out_loop);
  }
  return py::make_tuple(nnz, loop);
}

py::array_t<float> normal(uint64_t seed, const Ids& ids, int64_t k) {
  if (k < 1) throw ConfigInvalid("keyed_normal: k must be >= 1");
  py::array_t<float> out({static_cast<int64_t>(ids.size()), k});
  float* x = out.mutable_data();
  const int64_t* id = ids.data();
  const int64_t count = ids.size();
  {
    py::gil_scoped_release nogil;
    keyed_normal(seed, id, count, k, x);
  }
  return out;
}

py::array_t<double> uniforms(uint64_t seed, const Ids& ids) {
  py::array_t<double> out(ids.size());
  double* u = out.mutable_data();
  const int64_t* id = ids.data();
  const int64_t count = ids.size();
  {
    py::gil_scoped_release nogil;
    keyed_uniform(seed, id, count, u);
  }
  return out;
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
  m.def("generate_analog_rows", &generate_rows,
        "Rows [begin, end) of a paper-scale analog: (indptr int64[end-begin+1] from 0, indices int32), canonical",
        py::arg("family"), py::arg("n"), py::arg("seed"), py::arg("params"), py::arg("begin"), py::arg("end"));
  m.def("analog_degrees", &degrees,
        "(nonzeros int64, has diagonal bool) of the analog's rows `ids`, without returning the rows",
        py::arg("family"), py::arg("n"), py::arg("seed"), py::arg("params"), py::arg("ids"));
  m.def("keyed_normal", &normal, "float32[len(ids), k] standard normals keyed on (seed, row id)", py::arg("seed"),
        py::arg("ids"), py::arg("k"));
  m.def("keyed_uniform", &uniforms, "float64[len(ids)] uniforms in [0, 1) keyed on (seed, row id)",
        py::arg("seed"), py::arg("ids"));
  m.def("node_stats", &stats,
        "Per-node workload statistics of a canonical CSR pattern in one streaming pass (hw_models.definitions)",
        py::arg("indptr"), py::arg("indices"), py::arg("n_cols"), py::arg("row_bounds"), py::arg("col_bounds"),
        py::arg("cores"), py::arg("window"), py::arg("rank_partition") = "rows");
}
