// Python binding of one node's NetSparse pipeline -> hw_models._C.units.RigNode.
// submit, pump_reads, serve and absorb release the GIL while the units work, so a RIG gather running in
// a background thread (comm/rig.py InFlight) overlaps the SpMM of the caller's thread.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "bind/bindings.h"
#include "units/errors.h"
#include "units/header_model.h"
#include "units/rig_node.h"
#include "units/rig_unit.h"

namespace py = pybind11;
using namespace netsparse::units;

namespace {
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

// Keeps the Python buffers (halo, local properties, submitted arrays) alive while C++ points into them:
// the submitted idxs and slots are read in place (a copy only when they are not C-contiguous int64), so a
// rank's idx stream (one idx per nonzero) is never held twice.
struct NodeHandle {
  std::unique_ptr<RigNode> node;
  py::array halo, local;
  std::vector<I64> keep;
};

uint8_t* writable_bytes(py::array& a, const char* what) {
  if (!(a.flags() & py::array::c_style)) throw ConfigInvalid(std::string(what) + " must be C-contiguous");
  if (!a.writeable()) throw ConfigInvalid(std::string(what) + " must be writable");
  return static_cast<uint8_t*>(a.mutable_data());
}

py::dict take(NodeHandle& h, uint16_t type) {
  py::dict out;
  for (int64_t d = 0; d < h.node->map().n_nodes(); ++d) {
    auto& s = h.node->stream(type, static_cast<uint32_t>(d));
    if (s.empty()) continue;
    out[py::int_(d)] = py::bytes(reinterpret_cast<const char*>(s.data()), s.size());
    s.clear();
  }
  return out;
}

const uint8_t* bytes_ptr(const py::bytes& b, int64_t* n) {
  char* p;
  py::ssize_t len;
  PyBytes_AsStringAndSize(b.ptr(), &p, &len);
  *n = len;
  return reinterpret_cast<const uint8_t*>(p);
}

py::dict stats(const NodeHandle& h) {
  const RigNodeStats s = h.node->stats();
  const ConcatConfig& cc = h.node->config().concat;
  py::dict d;
  d["idxs"] = s.rig.idxs;
  d["local"] = s.rig.local;
  d["filtered"] = s.rig.filtered;
  d["coalesced"] = s.rig.coalesced;
  d["prs_issued"] = s.rig.prs;
  d["responses"] = s.rig.responses;
  d["stalls"] = s.rig.stalls;
  d["commands"] = s.rig.commands;
  d["served_prs"] = s.served_prs;
  const HeaderSizes wire = HeaderSizes::wire(cc.upper_bytes);
  int64_t packets = 0, prs = 0, header = 0, encoded = 0;
  const char* names[2] = {"read", "response"};
  for (int t = 0; t < 2; ++t) {
    const int64_t hdr = s.packets[t] * (cc.upper_bytes + wire.concat) + s.prs[t] * wire.pr;
    const int64_t payload = s.encoded_bytes[t] - s.packets[t] * wire.concat - s.prs[t] * wire.pr;
    py::dict x;
    x["packets"] = s.packets[t];
    x["prs"] = s.prs[t];
    x["header_bytes"] = hdr;
    x["payload_bytes"] = payload;
    x["wire_bytes"] = hdr + payload;
    d[names[t]] = x;
    packets += s.packets[t];
    prs += s.prs[t];
    header += hdr;
    encoded += payload;
  }
  d["packets"] = packets;
  d["prs"] = prs;
  d["prs_per_packet"] = packets ? static_cast<double>(prs) / packets : 0.0;
  d["header_bytes"] = header;
  d["payload_bytes"] = encoded;
  d["wire_bytes"] = header + encoded;
  d["goodput"] = header + encoded ? static_cast<double>(encoded) / (header + encoded) : 0.0;
  d["clock"] = h.node->clock();
  return d;
}
}  // namespace

void bind_rig_node(py::module_& units) {
  units.attr("AUTO_BATCH") = netsparse::units::kAutoBatch;
  units.attr("WHOLE_STREAM_BATCH") = netsparse::units::kWholeStreamBatch;
  units.def("auto_batch_size", &netsparse::units::auto_batch_size,
            "RIG batch size of batch_size=auto for a node with node_idxs nonzeros when the largest node has "
            "max_node_idxs (rule in docs/simulator.md)",
            py::arg("node_idxs"), py::arg("max_node_idxs"), py::arg("client_units"));
  py::class_<NodeHandle>(units, "RigNode",
                         "One node's NetSparse pipeline: client RIG units + Idx Filter + concatenators + server units")
      .def(py::init([](uint32_t node, std::vector<int64_t> row_bounds, int64_t n_units, int64_t n_client_units,
                       int64_t batch_size, int64_t pending_capacity, bool filter, bool coalesce, int64_t mtu,
                       int64_t upper_bytes, int64_t delay, int64_t cycles_per_pr) {
             RigNodeConfig c;
             c.n_units = n_units;
             c.n_client_units = n_client_units;
             c.batch_size = batch_size;  // units.AUTO_BATCH, units.WHOLE_STREAM_BATCH or > 0 (hw_models.hardware)
             c.pending_capacity = pending_capacity;
             c.filter = filter;
             c.coalesce = coalesce;
             c.cycles_per_pr = cycles_per_pr;
             c.concat.mtu = mtu;
             c.concat.upper_bytes = upper_bytes;
             c.concat.delay_cycles = delay;  // >= 0 or units.INFINITE_DELAY (checked by ConcatConfig::validate)
             auto h = std::make_unique<NodeHandle>();
             h->node = std::make_unique<RigNode>(node, std::move(row_bounds), c);
             return h;
           }),
           py::arg("node"), py::arg("row_bounds"), py::kw_only(), py::arg("n_units"), py::arg("n_client_units"),
           py::arg("batch_size"), py::arg("pending_capacity"), py::arg("filter") = true, py::arg("coalesce") = true,
           py::arg("mtu"), py::arg("upper_bytes"), py::arg("delay_cycles"), py::arg("cycles_per_pr"))
      .def("begin_kernel",
           [](NodeHandle& h, int64_t prop_bytes, py::array halo, py::array local) {
             uint8_t* hp = writable_bytes(halo, "halo buffer");
             if (!(local.flags() & py::array::c_style))
               throw ConfigInvalid("local property array must be C-contiguous");
             h.node->begin_kernel(prop_bytes, hp, halo.nbytes(), static_cast<const uint8_t*>(local.data()),
                                  local.nbytes());
             h.halo = halo;
             h.local = local;
             h.keep.clear();
           },
           "Start a kernel: property size in bytes, writable halo buffer (slots x prop_bytes), local rows",
           py::arg("prop_bytes"), py::arg("halo"), py::arg("local"))
      .def("submit",
           [](NodeHandle& h, const I64& idxs, const I64& slots) {
             if (idxs.ndim() != 1 || slots.ndim() != 1 || idxs.size() != slots.size())
               throw ConfigInvalid("idxs and slots must be 1-D arrays of the same length");
             {
               py::gil_scoped_release release;
               h.node->submit(idxs.data(), slots.data(), static_cast<int64_t>(idxs.size()));  // validates first
             }
             h.keep.push_back(idxs);
             h.keep.push_back(slots);
           },
           "Queue RIG commands: idxs (global column ids) and their halo slots (ignored for local idxs)",
           py::arg("idxs"), py::arg("slots"))
      .def("pump_reads",
           [](NodeHandle& h, int64_t now) {
             {
               py::gil_scoped_release release;
               h.node->pump_reads(now);
             }
             return take(h, kReadType);
           },
           "Issue read PRs until every client unit stalls or finishes; {dest: read packet bytes}", py::arg("now") = 0)
      .def("serve",
           [](NodeHandle& h, const py::bytes& data) {
             int64_t n;
             const uint8_t* p = bytes_ptr(data, &n);  // `data` is held by the caller for the whole call
             {
               py::gil_scoped_release release;
               h.node->serve(p, n);
             }
             return take(h, kResponseType);
           },
           "Answer read packets from a peer; {dest: response packet bytes}", py::arg("data"))
      .def("absorb",
           [](NodeHandle& h, const py::bytes& data) {
             int64_t n;
             const uint8_t* p = bytes_ptr(data, &n);
             py::gil_scoped_release release;
             h.node->absorb(p, n);
           },
           "Write response packets into the halo buffer", py::arg("data"))
      .def("done", [](const NodeHandle& h) { return h.node->done(); })
      .def_property_readonly("pending", [](const NodeHandle& h) { return h.node->pending(); })
      .def_property_readonly("n_client_units", [](const NodeHandle& h) { return h.node->n_client_units(); })
      // the packet size limits the node was built with: a fabric decodes the node's frames with them
      .def_property_readonly("mtu", [](const NodeHandle& h) { return h.node->config().concat.mtu; })
      .def_property_readonly("upper_bytes", [](const NodeHandle& h) { return h.node->config().concat.upper_bytes; })
      // the hardware settings it was built with, as the binding took them (hw_models.hardware encodings)
      .def_property_readonly("hardware",
                             [](const NodeHandle& h) {
                               const RigNodeConfig& c = h.node->config();
                               py::dict d;
                               d["n_units"] = c.n_units;
                               d["batch_size"] = c.batch_size;
                               d["pending_capacity"] = c.pending_capacity;
                               d["mtu"] = c.concat.mtu;
                               d["upper_bytes"] = c.concat.upper_bytes;
                               d["delay_cycles"] = c.concat.delay_cycles;
                               d["cycles_per_pr"] = c.cycles_per_pr;
                               return d;
                             })
      .def("reset_stats", [](NodeHandle& h) { h.node->reset_stats(); }, "Zero every counter (per layer/direction)")
      .def("stats", &stats, "Every counter plus packets, PRs/packet, header, payload and wire bytes (Fig. 6 sizes)");
}
