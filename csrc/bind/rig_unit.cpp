// Python binding of one RIG client unit (paper §5.1-5.3) with its node context, for unit tests and
// tools -> hw_models._C.units.RigClientUnit. (The server unit is exercised through RigNode.serve.)
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "bind/bindings.h"
#include "units/errors.h"
#include "units/rig_unit.h"

namespace py = pybind11;
using namespace netsparse::units;

namespace {
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

// One client unit alone on a node: it owns its Idx Filter, halo buffer and command arrays.
struct ClientHarness {
  NodeMap map;
  IdxFilter filter;
  RigContext ctx;
  RigClientUnit unit;
  std::vector<std::vector<int64_t>> keep;  // command arrays stay alive until reset
  py::array_t<uint8_t> halo;

  ClientHarness(uint32_t node, std::vector<int64_t> bounds, int64_t capacity, bool filter_on, bool coalesce_on)
      : map(std::move(bounds)), unit(0, capacity) {
    if (node >= map.n_nodes()) throw ConfigInvalid("node out of range");
    ctx.node = node;
    ctx.map = &map;
    ctx.row_start = map.bounds[node];
    ctx.row_end = map.bounds[node + 1];
    ctx.filter = &filter;
    ctx.filter_on = filter_on;
    ctx.coalesce_on = coalesce_on;
    filter.reset(map.n_cols());
  }
};
}  // namespace

void bind_rig_unit(py::module_& units) {
  py::class_<ClientHarness>(units, "RigClientUnit",
                            "One RIG client unit (tid 0) of `node` with its own Idx Filter (paper §5.1-5.3)")
      .def(py::init<uint32_t, std::vector<int64_t>, int64_t, bool, bool>(), py::kw_only(), py::arg("node"),
           py::arg("row_bounds"), py::arg("pending_capacity"), py::arg("filter") = true,
           py::arg("coalesce") = true)
      .def("begin_kernel",
           [](ClientHarness& h, int64_t prop_bytes, int64_t n_slots) {
             if (prop_bytes <= 0) throw ConfigInvalid("property size must be > 0 bytes");
             if (n_slots < 0) throw ConfigInvalid("n_slots must be >= 0");
             h.unit.reset();
             h.keep.clear();
             h.filter.reset(h.map.n_cols());
             h.halo = py::array_t<uint8_t>({n_slots, prop_bytes});
             std::memset(h.halo.mutable_data(), 0, static_cast<size_t>(n_slots * prop_bytes));
             h.ctx.prop_bytes = static_cast<uint32_t>(prop_bytes);
             h.ctx.halo = h.halo.mutable_data();
             h.ctx.n_slots = n_slots;
           },
           "Invalidate the filter and allocate a zeroed halo buffer of n_slots x prop_bytes", py::arg("prop_bytes"),
           py::arg("n_slots"))
      .def("enqueue",
           [](ClientHarness& h, const I64& idx, const I64& slot) {
             if (idx.size() != slot.size()) throw ConfigInvalid("idxs and slots need the same length");
             if (h.ctx.prop_bytes == 0) throw OutOfOrder("enqueue before begin_kernel");
             const uint64_t lo = h.ctx.row_start, span = h.ctx.row_end - h.ctx.row_start;
             for (int64_t i = 0; i < idx.size(); ++i) {
               if (idx.at(i) < 0 || idx.at(i) >= h.map.n_cols())
                 throw ConfigInvalid("idx " + std::to_string(idx.at(i)) + " out of range [0, " +
                                     std::to_string(h.map.n_cols()) + ")");
               if (static_cast<uint64_t>(idx.at(i)) - lo >= span &&
                   (slot.at(i) < 0 || slot.at(i) >= h.ctx.n_slots))
                 throw ConfigInvalid("slot " + std::to_string(slot.at(i)) + " out of range");
             }
             h.keep.emplace_back(idx.data(), idx.data() + idx.size());
             const int64_t* ip = h.keep.back().data();
             h.keep.emplace_back(slot.data(), slot.data() + slot.size());
             h.unit.enqueue(ip, h.keep.back().data(), idx.size());
           },
           "Queue one RIG command", py::arg("idxs"), py::arg("slots"))
      .def("issue",
           [](ClientHarness& h) {
             std::vector<int64_t> dest, idx, id;
             h.unit.issue(h.ctx, [&](uint32_t d, const PR& pr) {
               dest.push_back(d);
               idx.push_back(static_cast<int64_t>(pr.idx));
               id.push_back(pr.id);
             });
             py::dict out;
             out["dest"] = py::array_t<int64_t>(dest.size(), dest.data());
             out["idx"] = py::array_t<int64_t>(idx.size(), idx.data());
             out["id"] = py::array_t<int64_t>(id.size(), id.data());
             return out;
           },
           "Issue until stall/wait/finish; returns the read PRs (dest, idx, id)")
      .def("respond",
           [](ClientHarness& h, int64_t idx, int64_t id, const py::bytes& payload) {
             const std::string_view s(payload);
             if (static_cast<int64_t>(s.size()) != h.ctx.prop_bytes)
               throw ConfigInvalid("payload must be prop_bytes long");
             h.unit.on_response(h.ctx, PR{h.ctx.node, 0, static_cast<uint64_t>(idx), static_cast<uint32_t>(id)},
                                reinterpret_cast<const uint8_t*>(s.data()));
           },
           py::arg("idx"), py::arg("id"), py::arg("payload"))
      .def_property_readonly("halo", [](ClientHarness& h) { return h.halo; })
      .def_property_readonly("stalled", [](const ClientHarness& h) { return h.unit.stalled(); })
      .def_property_readonly("finished", [](const ClientHarness& h) { return h.unit.finished(); })
      .def_property_readonly("pending", [](const ClientHarness& h) { return h.unit.pending(); })
      .def_property_readonly("counters", [](const ClientHarness& h) {
        const RigCounters& c = h.unit.counters;
        py::dict d;
        d["idxs"] = c.idxs;
        d["local"] = c.local;
        d["filtered"] = c.filtered;
        d["coalesced"] = c.coalesced;
        d["prs"] = c.prs;
        d["responses"] = c.responses;
        d["stalls"] = c.stalls;
        d["commands"] = c.commands;
        return d;
      });
}
