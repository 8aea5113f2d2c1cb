// Python binding of the concatenator (paper §6.1.2, §7.2) -> hw_models._C.units.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>

#include "bind/bindings.h"
#include "units/concatenator.h"
#include "units/errors.h"

namespace py = pybind11;
using namespace netsparse::units;

namespace {
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using U8 = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

py::dict take_streams(Concatenator& c) {
  py::dict out;
  for (uint16_t t = 0; t < 2; ++t)
    for (int64_t d = 0; d < c.config().n_dests; ++d) {
      auto& s = c.stream(t, static_cast<uint32_t>(d));
      if (s.empty()) continue;
      out[py::make_tuple(t, d)] = py::bytes(reinterpret_cast<const char*>(s.data()), s.size());
      s.clear();
    }
  return out;
}

}  // namespace

void bind_concatenator(py::module_& units) {
  units.attr("INFINITE_DELAY") = kInfiniteDelay;
  py::class_<Concatenator>(units, "Concatenator",
                           "Concatenation queues per (type, destination) with an expiration FIFO (paper §6.1.2)")
      .def(py::init([](int64_t n_dests, int64_t mtu, int64_t upper_bytes, int64_t delay, bool virtual_queues,
                       int64_t phys_queue_bytes, int64_t phys_queues, int64_t len) {
             ConcatConfig c;
             c.n_dests = n_dests;
             c.mtu = mtu;
             c.upper_bytes = upper_bytes;
             c.delay_cycles = delay;  // >= 0 or units.INFINITE_DELAY (hw_models.unit_args.cxx_delay)
             c.virtual_queues = virtual_queues;
             c.phys_queue_bytes = phys_queue_bytes;
             c.phys_queues = phys_queues;
             Concatenator con(c);
             con.begin(static_cast<uint32_t>(len));
             return con;
           }),
           py::kw_only(), py::arg("n_dests"), py::arg("mtu"), py::arg("upper_bytes"), py::arg("delay_cycles"),
           py::arg("virtual_queues") = false, py::arg("phys_queue_bytes"), py::arg("phys_queues"), py::arg("len") = 0)
      .def("begin", [](Concatenator& c, int64_t len) {
        if (len < 0 || len > UINT32_MAX) throw ConfigInvalid("len must fit a u32");
        c.begin(static_cast<uint32_t>(len));
      }, py::arg("len"))
      .def("push_many",
           [](Concatenator& c, const I64& type, const I64& dest, const I64& src, const I64& tid, const I64& idx,
              const I64& id, const I64& time, py::object payload) {
             const int64_t n = type.size();
             for (const I64* a : {&dest, &src, &tid, &idx, &id, &time})
               if (a->size() != n) throw ConfigInvalid("every PR array needs one entry per PR");
             U8 pay;
             const int64_t len = c.len();
             if (!payload.is_none()) {
               pay = U8::ensure(payload);
               if (!pay || pay.size() != n * len) throw ConfigInvalid("payload must be n x len bytes");
             }
             for (int64_t i = 0; i < n; ++i) {
               const int64_t t = type.at(i);
               if (t != kReadType && t != kResponseType) throw ConfigInvalid("type must be 0 or 1");
               if (t == kResponseType && payload.is_none())
                 throw ConfigInvalid("response PRs need a payload");
               c.push(static_cast<uint16_t>(t), static_cast<uint32_t>(dest.at(i)),
                      PR{static_cast<uint32_t>(src.at(i)), static_cast<uint16_t>(tid.at(i)),
                         static_cast<uint64_t>(idx.at(i)), static_cast<uint32_t>(id.at(i))},
                      pay ? pay.data() + i * len : nullptr, time.at(i));
             }
           },
           py::arg("type"), py::arg("dest"), py::arg("src"), py::arg("src_tid"), py::arg("idx"), py::arg("id"),
           py::arg("time"), py::arg("payload") = py::none())
      .def("advance", &Concatenator::advance, py::arg("now"))
      .def("flush_all", &Concatenator::flush_all, py::arg("now"))
      .def("take_streams", &take_streams, "{(type, dest): bytes of back-to-back packets}; clears them")
      .def("take_log",
           [](Concatenator& c) {
             auto& log = c.log();
             const auto n = static_cast<py::ssize_t>(log.size());
             I64 dest(n), type(n), nprs(n), time(n), reason(n);
             for (py::ssize_t i = 0; i < n; ++i) {
               dest.mutable_at(i) = log[i].dest;
               type.mutable_at(i) = log[i].type;
               nprs.mutable_at(i) = log[i].n_prs;
               time.mutable_at(i) = log[i].time;
               reason.mutable_at(i) = log[i].reason;
             }
             log.clear();
             py::dict d;
             d["dest"] = dest;
             d["type"] = type;
             d["n_prs"] = nprs;
             d["time"] = time;
             d["reason"] = reason;
             return d;
           },
           "Every flushed packet in order: dest, type, n_prs, time, reason (0 full, 1 expired, 2 flush_all, 3 pool)")
      .def_property_readonly("max_packet_bytes", &Concatenator::max_packet_bytes)
      .def("max_prs", &Concatenator::max_prs, py::arg("type"))
      .def_property_readonly("empty", &Concatenator::empty)
      .def_property_readonly("pool_in_use", &Concatenator::pool_in_use)
      .def_property_readonly("counters", [](const Concatenator& c) {
        py::dict d;
        d["packets"] = py::make_tuple(c.packets[0], c.packets[1]);
        d["prs"] = py::make_tuple(c.prs[0], c.prs[1]);
        d["bytes"] = py::make_tuple(c.bytes[0], c.bytes[1]);
        d["flushes"] = py::make_tuple(c.flushes[0], c.flushes[1], c.flushes[2], c.flushes[3]);
        return d;
      });
}
