// Python binding of the discrete-event simulator core -> netsparse_torch._C.units.simulate.
// Called by hw_models/simulator.py, which flattens HardwareParams and the topology into these arrays.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "bind/bindings.h"
#include "sim/simulator.h"
#include "units/rig_unit.h"

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

// Every SimConfig field by its Python key (the flat dict hw_models/simulator.py builds).
SimConfig config_from(const py::dict& d) {
  SimConfig c;
  struct Key {
    const char* name;
    std::function<void(const py::handle&)> set;
  };
  auto i64 = [](int64_t& f) { return [&f](const py::handle& v) { f = v.cast<int64_t>(); }; };
  auto f64 = [](double& f) { return [&f](const py::handle& v) { f = v.cast<double>(); }; };
  auto flag = [](bool& f) { return [&f](const py::handle& v) { f = v.cast<bool>(); }; };
  const Key keys[] = {
      {"filter", flag(c.filter)}, {"coalesce", flag(c.coalesce)}, {"concat_nic", flag(c.concat_nic)},
      {"switch", flag(c.switch_on)}, {"prop_bytes", i64(c.prop_bytes)}, {"client_units", i64(c.client_units)},
      {"server_units", i64(c.server_units)}, {"pending_entries", i64(c.pending_entries)},
      {"lsq_entries", i64(c.lsq_entries)}, {"batch", i64(c.batch)}, {"snic_ghz", f64(c.snic_ghz)},
      {"switch_ghz", f64(c.switch_ghz)}, {"nic_delay_cycles", i64(c.nic_delay_cycles)},
      {"switch_delay_cycles", i64(c.switch_delay_cycles)}, {"cache_latency_cycles", i64(c.cache_latency_cycles)},
      {"cache_bytes", i64(c.cache_bytes)}, {"cache_ways", i64(c.cache_ways)}, {"cache_segment", i64(c.cache_segment)},
      {"cache_max_line", i64(c.cache_max_line)}, {"switch_pipes", i64(c.switch_pipes)},
      {"switch_ports", i64(c.switch_ports)}, {"pcie_ps", i64(c.pcie_ps)}, {"pcie_bytes_per_s", f64(c.pcie_bytes_per_s)},
      {"idx_bytes", i64(c.idx_bytes)}, {"line_bytes", i64(c.line_bytes)}, {"l1_bytes", i64(c.l1_bytes)},
      {"l1_ways", i64(c.l1_ways)}, {"l1_cycles", i64(c.l1_cycles)}, {"l2_bytes", i64(c.l2_bytes)},
      {"l2_ways", i64(c.l2_ways)}, {"l2_cycles", i64(c.l2_cycles)}, {"llc_bytes", i64(c.llc_bytes)},
      {"llc_ways", i64(c.llc_ways)}, {"llc_cycles", i64(c.llc_cycles)}, {"dram_ps", i64(c.dram_ps)},
      {"switch_ps", i64(c.switch_ps)}, {"mtu", i64(c.mtu)}, {"upper_bytes", i64(c.upper_bytes)},
      {"concat_bytes", i64(c.concat_bytes)}, {"pr_bytes", i64(c.pr_bytes)},
      {"switch_buffer_bytes", i64(c.switch_buffer_bytes)}, {"rx_buffer_bytes", i64(c.rx_buffer_bytes)},
      {"tx_buffer_bytes", i64(c.tx_buffer_bytes)}, {"flit_layer", flag(c.flit_layer)},
      {"flit_bytes", i64(c.flit.flit_bytes)}, {"flit_piece_overhead", i64(c.flit.piece_overhead)},
      {"flit_pool_cycles", i64(c.flit.pool_cycles)}, {"flit_stitching", flag(c.flit.stitching)},
      {"flit_trimming", flag(c.flit.trimming)}, {"flit_sequencing", flag(c.flit.sequencing)},
      {"flit_no_pool_class", i64(c.flit.no_pool_class)},
  };
  for (auto item : d) {
    const std::string k = item.first.cast<std::string>();
    const Key* key = nullptr;
    for (const Key& x : keys)
      if (k == x.name) key = &x;
    if (!key) throw std::invalid_argument("simulator: unknown config key '" + k + "'");
    key->set(item.second);
  }
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
  COL(header_rx); COL(payload_rx); COL(wire_rx); COL(commands); COL(batch); COL(mem_l1); COL(mem_l2);
  COL(mem_llc); COL(mem_dram); COL(tx_waits); COL(rx_waits); COL(rx_peak); COL(tx_peak); COL(credit_waits);
#undef COL
  out["nodes"] = n;
  py::dict s;
  auto scol = [&](const char* name, int64_t SwitchCounters::*f) {
    py::array_t<int64_t> a(static_cast<py::ssize_t>(r.switches.size()));
    auto m = a.mutable_unchecked<1>();
    for (size_t i = 0; i < r.switches.size(); ++i) m(i) = r.switches[i].*f;
    s[name] = a;
  };
  scol("read_lookups", &SwitchCounters::lookups);
  scol("read_hits", &SwitchCounters::hits);
  scol("inserts", &SwitchCounters::inserted);
  scol("packets_in", &SwitchCounters::packets_in);
  scol("packets_out", &SwitchCounters::packets_out);
  scol("pipe_prs", &SwitchCounters::pipe_prs);
  scol("pipe_wait_cycles", &SwitchCounters::pipe_wait_cycles);
  scol("buffer_peak", &SwitchCounters::buffer_peak);
  scol("credit_waits", &SwitchCounters::credit_waits);
  out["switches"] = s;
  out["active_t_ps"] = py::array_t<int64_t>(r.active_t_ps.size(), r.active_t_ps.data());
  out["active_count"] = py::array_t<int64_t>(r.active_count.size(), r.active_count.data());
  out["events"] = r.events;
  out["max_packet_wire"] = r.max_packet_wire;
  out["drains"] = r.drains;
  out["max_queue"] = r.max_queue;
  static const char* kinds[] = {"issue", "nic_push", "nic_timer", "switch_timer", "tx_done", "arrive", "pipe_done",
                                "write", "serve", "credit", "flit_tick", "link_arrive"};
  py::dict ek;
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); ++i) ek[kinds[i]] = r.events_by_kind[i];
  out["events_by_kind"] = ek;
  if (!r.flit_links.empty()) out["flit_links"] = flit_dict(r.flit_links);
  out["wall_s"] = r.wall_s;
  return out;
}
}  // namespace

// A 1-D C-contiguous integer array, used in place (never converted: a conversion would copy).
static const void* int_array(const py::array& a, const char* name, bool* narrow) {
  const bool is_int = a.dtype().kind() == 'i';
  const bool i32 = is_int && a.itemsize() == 4, i64 = is_int && a.itemsize() == 8;
  const bool ok = a.ndim() == 1 && (a.flags() & py::array::c_style) && (i64 || (narrow && i32));
  if (!ok)
    throw std::invalid_argument(std::string("simulator: ") + name + " must be a 1-D C-contiguous " +
                                (narrow ? "int32 or int64" : "int64") + " array");
  if (narrow) *narrow = i32;
  return a.data();
}

void bind_sim(py::module_& units) {
  units.def("auto_batch_size", &netsparse::units::auto_batch_size,
            "RIG batch size of batch_size=auto for a node with node_idxs nonzeros when the largest node has "
            "max_node_idxs (issue 14; docs/simulator.md)",
            py::arg("node_idxs"), py::arg("max_node_idxs"), py::arg("client_units"));
  units.def(
      "simulate",
      [](const py::array& indptr, const py::array& indices, const I64& row_bounds, const I64& col_bounds,
         const py::dict& cfg, const I64& link_src, const I64& link_dst, const F64& link_bytes_per_s,
         const I64& link_latency_ps, const I64& switch_is_tor, const I64& routes) {
        if (routes.ndim() != 3) throw std::invalid_argument("simulator: routes must be [hosts, hosts, max_hops]");
        Csr a;
        a.indptr = static_cast<const int64_t*>(int_array(indptr, "indptr", nullptr));
        a.n_rows = indptr.size() - 1;
        a.indices = int_array(indices, "indices", &a.narrow);
        a.nnz = indices.size();
        if (a.n_rows < 0) throw std::invalid_argument("simulator: indptr must have n_rows + 1 entries");
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
        const std::vector<int64_t> rb = vec(row_bounds), cb = vec(col_bounds);
        SimResult r;
        {
          py::gil_scoped_release nogil;
          r = run(a, rb, cb, c, t);
        }
        return to_dict(r);
      },
      "Packet-level discrete-event simulation of NetSparse (issues 4, 14); see hw_models.simulator. indptr "
      "(int64) and indices (int32 or int64) are read in place.",
      py::arg("indptr"), py::arg("indices"), py::arg("row_bounds"), py::arg("col_bounds"), py::arg("cfg"),
      py::arg("link_src"), py::arg("link_dst"), py::arg("link_bytes_per_s"), py::arg("link_latency_ps"),
      py::arg("switch_is_tor"), py::arg("routes"));
}
