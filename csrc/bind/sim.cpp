// Python binding of the discrete-event simulator core -> hw_models._C.sim.simulate.
// Called by hw_models/simulator.py, which builds the SimConfig from HardwareParams and flattens the
// topology into these arrays. Parameters, counters and event kinds are the X-macro lists of sim/types.h.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>

#include "bind/bindings.h"
#include "sim/simulator.h"
#include "sim/workload.h"
#include "units/errors.h"
#include "units/rig_unit.h"

namespace py = pybind11;
using netsparse::units::ConfigInvalid;
using namespace netsparse::sim;

namespace {
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;

std::vector<int64_t> vec(const I64& a) { return std::vector<int64_t>(a.data(), a.data() + a.size()); }

template <class T, class F>
py::array_t<int64_t> column(const std::vector<T>& v, F f) {
  py::array_t<int64_t> a(static_cast<py::ssize_t>(v.size()));
  auto m = a.mutable_unchecked<1>();
  for (size_t i = 0; i < v.size(); ++i) m(i) = f(v[i]);
  return a;
}

// Per inter-switch link: the flit unit's counters and the packet-mode bytes of the same packets.
py::dict flit_dict(const std::vector<FlitLinkResult>& v) {
  py::dict d;
  auto col = [&](const char* name, auto f) {
    py::array_t<int64_t> a(static_cast<py::ssize_t>(v.size()));
    auto m = a.mutable_unchecked<1>();
    for (size_t i = 0; i < v.size(); ++i) m(i) = f(v[i]);
    d[name] = a;
  };
#define FCOL(name, expr) col(name, [](const FlitLinkResult& x) { return static_cast<int64_t>(expr); })
  FCOL("link", x.link); FCOL("packet_bytes", x.packet_bytes); FCOL("flit_finish_ps", x.flit_finish_ps); FCOL("packets", x.stats.packets); FCOL("flits", x.stats.flits);
  FCOL("wire_bytes", x.stats.wire_bytes); FCOL("needed_bytes", x.stats.needed_bytes);
  FCOL("overhead_bytes", x.stats.overhead_bytes); FCOL("padding_bytes", x.stats.padding_bytes);
  FCOL("unstitched_flits", x.stats.unstitched_flits); FCOL("stitched_packets", x.stats.stitched_packets);
  FCOL("stitched_flits", x.stats.stitched_flits); FCOL("pieces", x.stats.pieces);
  FCOL("trimmed_bytes", x.stats.trimmed_bytes);
#undef FCOL
  return d;
}

// stats=links: the bin width and each statistic as [bins, links].
py::dict link_stats_dict(const LinkStatsResult& s) {
  py::dict d;
  d["bin_ps"] = s.bin_ps;
  auto grid = [&](const std::vector<int64_t>& v) {
    py::array_t<int64_t> a({static_cast<py::ssize_t>(s.bins), static_cast<py::ssize_t>(s.links)});
    if (!v.empty()) std::memcpy(a.mutable_data(), v.data(), v.size() * sizeof(int64_t));
    return a;
  };
  d["busy_ps"] = grid(s.busy_ps);
  d["bytes"] = grid(s.bytes);
  d["packets"] = grid(s.packets);
  d["queue_ps"] = grid(s.queue_ps);
  d["queue_max"] = grid(s.queue_max);
  return d;
}

// The hop log as [rows, 8] int64 (HopRow's fields in order).
py::array_t<int64_t> hop_rows(const std::vector<HopRow>& rows) {
  static_assert(sizeof(HopRow) == 8 * sizeof(int64_t), "a hop row is 8 int64 fields");
  py::array_t<int64_t> a({static_cast<py::ssize_t>(rows.size()), py::ssize_t{8}});
  if (!rows.empty()) std::memcpy(a.mutable_data(), rows.data(), rows.size() * sizeof(HopRow));
  return a;
}

py::dict to_dict(const SimResult& r) {
  py::dict out;
  out["node_done_ps"] = py::array_t<int64_t>(r.node_done_ps.size(), r.node_done_ps.data());
// One column per counter of an X-macro list: cols[name] = that counter of every row in `rows`.
#define COUNTER_COLUMN(name, meaning) cols[#name] = column(rows, [](const auto& c) { return c.name; });
#define COUNTER_COLUMNS(rows_of, LIST) \
  [&] {                                 \
    py::dict cols;                      \
    const auto& rows = rows_of;         \
    LIST(COUNTER_COLUMN)                \
    return cols;                        \
  }()
  out["nodes"] = COUNTER_COLUMNS(r.nodes, NETSPARSE_NODE_COUNTERS);
  out["switches"] = COUNTER_COLUMNS(r.switches, NETSPARSE_SWITCH_COUNTERS);
  out["active_t_ps"] = py::array_t<int64_t>(r.active_t_ps.size(), r.active_t_ps.data());
  out["active_count"] = py::array_t<int64_t>(r.active_count.size(), r.active_count.data());
  out["events"] = r.events;
  out["max_packet_wire"] = r.max_packet_wire;
  out["drains"] = r.drains;
  out["max_queue"] = r.max_queue;
  py::dict ek;
  int kind = 0;
#define KIND(name, meaning) ek[#name] = r.events_by_kind[kind++];
  NETSPARSE_SIM_EVENTS(KIND)
#undef KIND
  out["events_by_kind"] = ek;
  if (!r.flit_links.empty()) out["flit_links"] = flit_dict(r.flit_links);
  const py::ssize_t nb = kBounds, nn = static_cast<py::ssize_t>(r.node_done_ps.size());
  out["bound_ps"] = py::array_t<int64_t>({nn, nb}, r.bound_ps.data());
  out["stalled_on"] = py::array_t<double>({nn, nb}, r.stalled_on.data());
  // The critical paths' stretches: node, t0, t1 and [stretches, kBounds] ps.
  py::array_t<int64_t> seg({static_cast<py::ssize_t>(r.path.size()), nb + 3});
  auto m = seg.mutable_unchecked<2>();
  for (size_t i = 0; i < r.path.size(); ++i) {
    const PathSegment& g = r.path[i];
    m(i, 0) = g.node;
    m(i, 1) = g.t0;
    m(i, 2) = g.t1;
    for (int b = 0; b < kBounds; ++b) m(i, 3 + b) = g.ps[b];
  }
  out["path"] = seg;
  out["pipes"] = COUNTER_COLUMNS(r.pipes, NETSPARSE_PIPE_COUNTERS);
#undef COUNTER_COLUMNS
#undef COUNTER_COLUMN
  out["wall_s"] = r.wall_s;
  out["cpu_s"] = r.cpu_s;
  return out;
}
}  // namespace

// A 1-D C-contiguous integer array, used in place (never converted: a conversion would copy).
static const void* int_array(const py::array& a, const char* name, bool* narrow) {
  const bool is_int = a.dtype().kind() == 'i';
  const bool i32 = is_int && a.itemsize() == 4, i64 = is_int && a.itemsize() == 8;
  const bool ok = a.ndim() == 1 && (a.flags() & py::array::c_style) && (i64 || (narrow && i32));
  if (!ok)
    throw ConfigInvalid(std::string("simulator: ") + name + " must be a 1-D C-contiguous " +
                        (narrow ? "int32 or int64" : "int64") + " array");
  if (narrow) *narrow = i32;
  return a.data();
}

// (name, meaning) of every entry of one X-macro list.
py::list described(std::initializer_list<std::pair<const char*, const char*>> items) {
  py::list out;
  for (const auto& [name, meaning] : items) out.append(py::make_tuple(name, meaning));
  return out;
}

void bind_sim(py::module_& sim) {
  auto cfg = py::class_<SimConfig>(sim, "SimConfig",
                                   "Every simulator parameter (csrc/sim/simulator.h); hw_models.simulator.sim_config "
                                   "fills it from HardwareParams. Fields start at zero.");
  cfg.def(py::init<>());
#define CFG_FIELD(type, name, meaning) cfg.def_readwrite(#name, &SimConfig::name, meaning);
  NETSPARSE_SIM_CONFIG(CFG_FIELD)
#undef CFG_FIELD
  cfg.def_readwrite("flit", &SimConfig::flit, "NetCrafter flit link parameters (used when flit_layer)");
#define ITEM(name, meaning) {#name, meaning},
  sim.attr("SIM_COUNTERS") = py::dict(py::arg("nodes") = described({NETSPARSE_NODE_COUNTERS(ITEM)}),
                                        py::arg("switches") = described({NETSPARSE_SWITCH_COUNTERS(ITEM)}),
                                        py::arg("events_by_kind") = described({NETSPARSE_SIM_EVENTS(ITEM)}));
  sim.attr("SIM_BOUNDS") = described({NETSPARSE_BOUNDS(ITEM)});
  sim.attr("SIM_PIPE_COUNTERS") = described({NETSPARSE_PIPE_COUNTERS(ITEM)});
#undef ITEM
  sim.def(
      "simulate",
      [](const py::array& indptr, const py::array& indices, const I64& row_bounds, const I64& col_bounds,
         const SimConfig& c, const I64& link_src, const I64& link_dst, const F64& link_bytes_per_s,
         const I64& link_latency_ps, const I64& switch_is_tor, const I64& routes, bool log_hops,
         int64_t link_stats_bin_ps, const py::object& progress, int64_t progress_events) {
        const bool alternatives = routes.ndim() == 4;  // [paths, hosts, hosts, max_hops]
        if (routes.ndim() != 3 && !alternatives)
          throw ConfigInvalid("simulator: routes must be [hosts, hosts, max_hops] or [paths, hosts, hosts, max_hops]");
        Csr a;
        a.indptr = static_cast<const int64_t*>(int_array(indptr, "indptr", nullptr));
        a.n_rows = indptr.size() - 1;
        a.indices = int_array(indices, "indices", &a.narrow);
        a.nnz = indices.size();
        if (a.n_rows < 0) throw ConfigInvalid("simulator: indptr must have n_rows + 1 entries");
        Topo t;
        t.n_hosts = routes.shape(alternatives ? 1 : 0);
        t.n_switches = switch_is_tor.size();
        t.link_src = vec(link_src);
        t.link_dst = vec(link_dst);
        t.link_bytes_per_s.assign(link_bytes_per_s.data(), link_bytes_per_s.data() + link_bytes_per_s.size());
        t.link_latency_ps = vec(link_latency_ps);
        const std::vector<int64_t> tor = vec(switch_is_tor);
        t.switch_is_tor.assign(tor.begin(), tor.end());
        t.routes = vec(routes);
        t.max_hops = routes.shape(alternatives ? 3 : 2);
        t.paths = alternatives ? routes.shape(0) : 1;
        const size_t nl = t.link_src.size();
        if (t.link_dst.size() != nl || t.link_bytes_per_s.size() != nl || t.link_latency_ps.size() != nl)
          throw ConfigInvalid("simulator: link arrays differ in length");
        for (double b : t.link_bytes_per_s)
          if (!(b > 0)) throw ConfigInvalid("simulator: link rate must be > 0 bytes/s");
        const std::vector<int64_t> rb = vec(row_bounds), cb = vec(col_bounds);
        Observe obs{log_hops, link_stats_bin_ps};
        if (!progress.is_none()) {
          if (progress_events < 1) throw ConfigInvalid("simulator: progress_events must be >= 1");
          obs.progress_events = progress_events;
          // With the GIL for the call; a Ctrl-C (or what the callable raises) stops the run: it is thrown
          // through the loop as error_already_set and raised again in the caller.
          obs.progress = [&progress](int64_t read, int64_t total) {
            py::gil_scoped_acquire gil;
            progress(read, total);
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
          };
        }
        SimResult r;
        {
          py::gil_scoped_release nogil;
          r = run(a, rb, cb, c, t, obs);
        }
        py::dict out = to_dict(r);
        if (log_hops) out["hops"] = hop_rows(r.hops);
        if (link_stats_bin_ps != kLinkStatsOff) out["link_stats"] = link_stats_dict(r.link_stats);
        return out;
      },
      "Packet-level discrete-event simulation of NetSparse (docs/simulator.md); see hw_models.simulator. routes: "
      "[hosts, hosts, max_hops], or [paths, hosts, hosts, max_hops] where a pair's packets take its paths in turn. indptr "
      "(int64) and indices (int32 or int64) are read in place. log_hops=True adds the network's hop log, "
      "\"hops\": [rows, 8] (kind, serial, where, wire, queued, start, arrive, avail; csrc/sim/types.h HopRow). "
      "link_stats_bin_ps (0 = off, -1 = automatic bins, else the bin width in ps) adds \"link_stats\": the bin "
      "width and [bins, links] arrays busy_ps, bytes, packets, queue_ps, queue_max (csrc/sim/link_stats.h). "
      "progress(read, total), every progress_events events: the idxs the client units have read so far and in "
      "all; a Ctrl-C or its exception stops the run.",
      py::arg("indptr"), py::arg("indices"), py::arg("row_bounds"), py::arg("col_bounds"), py::arg("cfg"),
      py::arg("link_src"), py::arg("link_dst"), py::arg("link_bytes_per_s"), py::arg("link_latency_ps"),
      py::arg("switch_is_tor"), py::arg("routes"), py::arg("log_hops") = false,
      py::arg("link_stats_bin_ps") = kLinkStatsOff, py::arg("progress") = py::none(),
      py::arg("progress_events") = int64_t{1} << 20);
  sim.def(
      "remote_command_ends",
      [](const I64& idx, int64_t lo, int64_t hi, int64_t batch) {
        if (batch < 1) throw ConfigInvalid("remote_command_ends: batch must be >= 1");
        std::vector<int64_t> ends;
        remote_command_ends(idx.data(), 0, idx.size(), lo, hi, batch, ends);
        return ends;
      },
      "snic.rig_auto_split=remote_idxs: where a node's RIG commands end in its idx stream `idx` (its "
      "columns: [lo, hi)), a cut after every batch-th remote idx (csrc/sim/workload.h).",
      py::arg("idx"), py::arg("lo"), py::arg("hi"), py::arg("batch"));
  sim.def(
      "clock",
      [](double ghz, const I64& ps, const I64& cycles) {
        if (!(ghz > 0)) throw ConfigInvalid("clock: ghz must be > 0");
        const Clock ck(ghz);
        py::dict out;
        out["cycle"] = column(vec(ps), [&](int64_t p) { return ck.cycle(p); });
        out["defined_cycle"] = column(vec(ps), [&](int64_t p) { return ck.defined_cycle(p); });
        out["ps"] = column(vec(cycles), [&](int64_t c) { return ck.ps(c); });
        out["defined_ps"] = column(vec(cycles), [&](int64_t c) { return ck.defined_ps(c); });
        return out;
      },
      "One clock domain's conversions (csrc/sim/types.h Clock) at `ghz`: cycle(p) and its definition (x87's "
      "long double formula, in integers: csrc/sim/extended.h) for each p of `ps`, and the first picosecond ps(c) of each cycle c of `cycles` and its "
      "definition.",
      py::arg("ghz"), py::arg("ps"), py::arg("cycles"));
}
