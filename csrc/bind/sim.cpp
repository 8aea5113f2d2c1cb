// Python binding of the discrete-event simulator core -> netsparse_torch._C.units.simulate.
// Called by hw_models/simulator.py, which flattens HardwareParams and the topology into these arrays.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>

#include "bind/bindings.h"
#include "sim/simulator.h"

namespace py = pybind11;
using namespace netsparse::sim;

namespace {
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;

std::vector<int64_t> vec(const I64& a) { return std::vector<int64_t>(a.data(), a.data() + a.size()); }

template <class T>
T get(const py::dict& d, const char* k, T dflt) {
  return d.contains(k) ? d[k].cast<T>() : dflt;
}

SimConfig config_from(const py::dict& d) {
  static const char* known[] = {"filter", "coalesce", "concat_nic", "switch", "prop_bytes", "client_units",
                                "server_units", "pending_entries", "lsq_entries", "batch", "snic_ghz", "switch_ghz",
                                "nic_delay_cycles", "switch_delay_cycles", "cache_latency_cycles", "cache_bytes",
                                "cache_ways", "cache_segment", "cache_max_line", "pcie_ps", "switch_ps", "mtu",
                                "upper_bytes", "concat_bytes", "pr_bytes", "buffer_bytes", "pipe_buffer_bytes",
                                "flit_layer", "flit_bytes", "flit_piece_overhead", "flit_pool_cycles",
                                "flit_stitching", "flit_trimming", "flit_sequencing", "flit_no_pool_class"};
  for (auto item : d) {
    const std::string k = item.first.cast<std::string>();
    bool ok = false;
    for (const char* n : known) ok = ok || k == n;
    if (!ok) throw std::invalid_argument("simulator: unknown config key '" + k + "'");
  }
  SimConfig c;
  c.filter = get(d, "filter", c.filter);
  c.coalesce = get(d, "coalesce", c.coalesce);
  c.concat_nic = get(d, "concat_nic", c.concat_nic);
  c.switch_on = get(d, "switch", c.switch_on);
  c.prop_bytes = get(d, "prop_bytes", c.prop_bytes);
  c.client_units = get(d, "client_units", c.client_units);
  c.server_units = get(d, "server_units", c.server_units);
  c.pending_entries = get(d, "pending_entries", c.pending_entries);
  c.lsq_entries = get(d, "lsq_entries", c.lsq_entries);
  c.batch = get(d, "batch", c.batch);
  c.snic_ghz = get(d, "snic_ghz", c.snic_ghz);
  c.switch_ghz = get(d, "switch_ghz", c.switch_ghz);
  c.nic_delay_cycles = get(d, "nic_delay_cycles", c.nic_delay_cycles);
  c.switch_delay_cycles = get(d, "switch_delay_cycles", c.switch_delay_cycles);
  c.cache_latency_cycles = get(d, "cache_latency_cycles", c.cache_latency_cycles);
  c.cache_bytes = get(d, "cache_bytes", c.cache_bytes);
  c.cache_ways = get(d, "cache_ways", c.cache_ways);
  c.cache_segment = get(d, "cache_segment", c.cache_segment);
  c.cache_max_line = get(d, "cache_max_line", c.cache_max_line);
  c.pcie_ps = get(d, "pcie_ps", c.pcie_ps);
  c.switch_ps = get(d, "switch_ps", c.switch_ps);
  c.mtu = get(d, "mtu", c.mtu);
  c.upper_bytes = get(d, "upper_bytes", c.upper_bytes);
  c.concat_bytes = get(d, "concat_bytes", c.concat_bytes);
  c.pr_bytes = get(d, "pr_bytes", c.pr_bytes);
  c.buffer_bytes = get(d, "buffer_bytes", c.buffer_bytes);
  c.pipe_buffer_bytes = get(d, "pipe_buffer_bytes", c.pipe_buffer_bytes);
  c.flit_layer = get(d, "flit_layer", c.flit_layer);
  c.flit.flit_bytes = get(d, "flit_bytes", c.flit.flit_bytes);
  c.flit.piece_overhead = get(d, "flit_piece_overhead", c.flit.piece_overhead);
  c.flit.pool_cycles = get(d, "flit_pool_cycles", c.flit.pool_cycles);
  c.flit.stitching = get(d, "flit_stitching", c.flit.stitching);
  c.flit.trimming = get(d, "flit_trimming", c.flit.trimming);
  c.flit.sequencing = get(d, "flit_sequencing", c.flit.sequencing);
  c.flit.no_pool_class = get(d, "flit_no_pool_class", c.flit.no_pool_class);
  return c;
}

template <class F>
py::array_t<int64_t> column(const std::vector<NodeCounters>& v, F f) {
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

py::dict to_dict(const SimResult& r) {
  py::dict out;
  out["node_done_ps"] = py::array_t<int64_t>(r.node_done_ps.size(), r.node_done_ps.data());
  py::dict n;
#define COL(name) n[#name] = column(r.nodes, [](const NodeCounters& c) { return c.name; })
  COL(idxs); COL(local); COL(filtered); COL(coalesced); COL(read_prs); COL(responses); COL(stalls); COL(served);
  COL(packets_tx); COL(packets_rx); COL(prs_tx); COL(header_tx); COL(payload_tx); COL(wire_tx);
  COL(header_rx); COL(payload_rx); COL(wire_rx);
#undef COL
  out["nodes"] = n;
  py::dict s;
  std::vector<int64_t> lk, hi, ins, pin, pout, stall;
  for (const auto& c : r.switches) {
    lk.push_back(c.lookups); hi.push_back(c.hits); ins.push_back(c.inserted);
    pin.push_back(c.packets_in); pout.push_back(c.packets_out); stall.push_back(c.pipe_stalls);
  }
  s["read_lookups"] = py::array_t<int64_t>(lk.size(), lk.data());
  s["read_hits"] = py::array_t<int64_t>(hi.size(), hi.data());
  s["inserts"] = py::array_t<int64_t>(ins.size(), ins.data());
  s["packets_in"] = py::array_t<int64_t>(pin.size(), pin.data());
  s["packets_out"] = py::array_t<int64_t>(pout.size(), pout.data());
  s["pipe_stalls"] = py::array_t<int64_t>(stall.size(), stall.data());
  out["switches"] = s;
  out["active_t_ps"] = py::array_t<int64_t>(r.active_t_ps.size(), r.active_t_ps.data());
  out["active_count"] = py::array_t<int64_t>(r.active_count.size(), r.active_count.data());
  out["events"] = r.events;
  out["max_packet_wire"] = r.max_packet_wire;
  out["drains"] = r.drains;
  if (!r.flit_links.empty()) out["flit_links"] = flit_dict(r.flit_links);
  out["wall_s"] = r.wall_s;
  return out;
}
}  // namespace

void bind_sim(py::module_& units) {
  units.def(
      "simulate",
      [](const I64& indptr, const I64& indices, const I64& row_bounds, const I64& col_bounds, const py::dict& cfg,
         const I64& link_src, const I64& link_dst, const F64& link_bytes_per_s, const I64& link_latency_ps,
         const I64& switch_is_tor, const I64& routes) {
        if (routes.ndim() != 3) throw std::invalid_argument("simulator: routes must be [hosts, hosts, max_hops]");
        Topo t;
        t.n_hosts = routes.shape(0);
        t.n_switches = switch_is_tor.size();
        t.link_src = vec(link_src);
        t.link_dst = vec(link_dst);
        t.link_bytes_per_s.assign(link_bytes_per_s.data(), link_bytes_per_s.data() + link_bytes_per_s.size());
        t.link_latency_ps = vec(link_latency_ps);
        const std::vector<int64_t> tor = vec(switch_is_tor);
        t.switch_is_tor.assign(tor.begin(), tor.end());
        t.routes = vec(routes);
        t.max_hops = routes.shape(2);
        const size_t nl = t.link_src.size();
        if (t.link_dst.size() != nl || t.link_bytes_per_s.size() != nl || t.link_latency_ps.size() != nl)
          throw std::invalid_argument("simulator: link arrays differ in length");
        for (double b : t.link_bytes_per_s)
          if (!(b > 0)) throw std::invalid_argument("simulator: link rate must be > 0 bytes/s");
        const SimConfig c = config_from(cfg);
        const std::vector<int64_t> ip = vec(indptr), rb = vec(row_bounds), cb = vec(col_bounds);
        SimResult r;
        {
          py::gil_scoped_release nogil;
          r = run(ip, indices.data(), indices.size(), rb, cb, c, t);
        }
        return to_dict(r);
      },
      "Packet-level discrete-event simulation of NetSparse (issue 4); see hw_models.simulator",
      py::arg("indptr"), py::arg("indices"), py::arg("row_bounds"), py::arg("col_bounds"), py::arg("cfg"),
      py::arg("link_src"), py::arg("link_dst"), py::arg("link_bytes_per_s"), py::arg("link_latency_ps"),
      py::arg("switch_is_tor"), py::arg("routes"));
}
