// Python binding of the NetCrafter flit link unit (hw_models._C.units).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "units/errors.h"
#include "units/flit_link.h"

namespace py = pybind11;
using netsparse::units::ConfigInvalid;
using netsparse::units::FlitLinkConfig;
using netsparse::units::FlitPacket;

namespace {

using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

std::vector<FlitPacket> packets(const I64& arrival, const I64& dest, const I64& header, const I64& payload,
                                const I64& useful, const I64& cls) {
  const auto n = arrival.size();
  const I64* cols[] = {&dest, &header, &payload, &useful, &cls};
  const char* names[] = {"dest", "header", "payload", "useful", "cls"};
  for (int k = 0; k < 5; ++k) {
    if (cols[k]->ndim() != 1 || cols[k]->size() != n)
      throw ConfigInvalid(std::string(names[k]) + " must be a 1-D array with one entry per packet (" +
                          std::to_string(n) + ")");
  }
  std::vector<FlitPacket> pk(n);
  auto a = arrival.unchecked<1>(), d = dest.unchecked<1>(), h = header.unchecked<1>(), p = payload.unchecked<1>(),
       u = useful.unchecked<1>(), c = cls.unchecked<1>();
  for (py::ssize_t i = 0; i < n; ++i) pk[i] = FlitPacket{a(i), d(i), h(i), p(i), u(i), c(i)};
  return pk;
}

py::dict result(const netsparse::units::FlitLinkStats& st, const std::vector<int64_t>& done) {
  py::dict out;
  out["packets"] = st.packets;
  out["flits"] = st.flits;
  out["wire_bytes"] = st.wire_bytes;
  out["needed_bytes"] = st.needed_bytes;
  out["overhead_bytes"] = st.overhead_bytes;
  out["padding_bytes"] = st.padding_bytes;
  out["unstitched_flits"] = st.unstitched_flits;
  out["stitched_packets"] = st.stitched_packets;
  out["stitched_flits"] = st.stitched_flits;
  out["pieces"] = st.pieces;
  out["trimmed_bytes"] = st.trimmed_bytes;
  out["last_cycle"] = st.last_cycle;
  out["done"] = py::array_t<int64_t>(static_cast<py::ssize_t>(done.size()), done.data());
  return out;
}

py::dict run(const FlitLinkConfig& cfg, const I64& arrival, const I64& dest, const I64& header, const I64& payload,
             const I64& useful, const I64& cls) {
  const std::vector<FlitPacket> pk = packets(arrival, dest, header, payload, useful, cls);
  std::vector<int64_t> done;
  netsparse::units::FlitLinkStats st;
  {
    py::gil_scoped_release release;
    st = netsparse::units::run_flit_link(cfg, pk, &done);
  }
  return result(st, done);
}

// Drives FlitLinkState the way the simulator does: ticks at next_event() until the next arrival, then
// advance to the arrival and push. `late` counts completions collected at a tick other than their own
// cycle (the simulator needs 0: the tick sequence must stop at every departure), `repeats` packets
// reported twice.
py::dict stream(const FlitLinkConfig& cfg, const I64& arrival, const I64& dest, const I64& header,
                const I64& payload, const I64& useful, const I64& cls) {
  const std::vector<FlitPacket> pk = packets(arrival, dest, header, payload, useful, cls);
  netsparse::units::FlitLinkState st(cfg);
  std::vector<int64_t> done(pk.size(), -1);
  int64_t late = 0, repeats = 0, ticks = 0;
  auto tick = [&](int64_t c) {
    st.advance(c);
    ++ticks;
    for (const auto& [id, d] : st.completed()) {
      if (done[id] >= 0) ++repeats;
      done[id] = d;
      if (d != c) ++late;  // a correct next_event() never lets a tick pass a departure
    }
    st.completed().clear();
  };
  for (const FlitPacket& p : pk) {
    for (int64_t e = st.next_event(); e <= p.arrival; e = st.next_event()) tick(e);
    tick(p.arrival);
    st.push(p);
  }
  for (int64_t e = st.next_event(); e != INT64_MAX; e = st.next_event()) tick(e);
  py::dict out = result(st.stats(), done);
  out["late"] = late;
  out["repeats"] = repeats;
  out["ticks"] = ticks;
  return out;
}

}  // namespace

void bind_flit_link(py::module_& units) {
  py::class_<FlitLinkConfig>(units, "FlitLinkConfig", "NetCrafter link-layer parameters (see csrc/units/flit_link.h); "
                                                   "hw_models.seeds.netcrafter.LinkConfig builds it")
      .def(py::init([](int64_t flit_bytes, int64_t piece_overhead, bool stitching, int64_t pool_cycles,
                       int64_t no_pool_class, bool sequencing, bool trimming, int64_t trim_granularity,
                       int64_t stitch_window) {
             FlitLinkConfig c{flit_bytes, piece_overhead, stitching, pool_cycles, no_pool_class,
                              sequencing, trimming, trim_granularity, stitch_window};
             c.validate();
             return c;
           }),
           py::kw_only(), py::arg("flit_bytes"), py::arg("piece_overhead"), py::arg("stitching"),
           py::arg("pool_cycles"), py::arg("no_pool_class"), py::arg("sequencing"), py::arg("trimming"),
           py::arg("trim_granularity"), py::arg("stitch_window"))
      .def_readwrite("flit_bytes", &FlitLinkConfig::flit_bytes)
      .def_readwrite("piece_overhead", &FlitLinkConfig::piece_overhead)
      .def_readwrite("stitching", &FlitLinkConfig::stitching)
      .def_readwrite("pool_cycles", &FlitLinkConfig::pool_cycles)
      .def_readwrite("no_pool_class", &FlitLinkConfig::no_pool_class)
      .def_readwrite("sequencing", &FlitLinkConfig::sequencing)
      .def_readwrite("trimming", &FlitLinkConfig::trimming)
      .def_readwrite("trim_granularity", &FlitLinkConfig::trim_granularity)
      .def_readwrite("stitch_window", &FlitLinkConfig::stitch_window);
  units.def("flit_link_run", &run,
            "Run a packet stream (arrays, sorted by arrival cycle) through one NetCrafter link; returns a dict of "
            "counters and `done`, the cycle each packet's last byte left",
            py::arg("config"), py::arg("arrival"), py::arg("dest"), py::arg("header"), py::arg("payload"),
            py::arg("useful"), py::arg("cls"));
  units.def("flit_link_stream", &stream,
            "The same as flit_link_run through the incremental FlitLinkState, driven like the simulator's "
            "event loop (ticks at next_event()); adds `late`, `repeats` and `ticks`",
            py::arg("config"), py::arg("arrival"), py::arg("dest"), py::arg("header"), py::arg("payload"),
            py::arg("useful"), py::arg("cls"));
  units.def("flits_for", &netsparse::units::flits_for, "Flits needed for `bytes` (padded to whole flits)",
            py::arg("bytes"), py::arg("flit_bytes"));
}
