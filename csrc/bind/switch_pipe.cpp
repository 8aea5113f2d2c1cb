// Python binding of the switch middle pipe (paper §6.2.1) -> hw_models._C.units.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>

#include "bind/bindings.h"
#include "units/errors.h"
#include "units/switch_pipe.h"

namespace py = pybind11;
using namespace netsparse::units;

void bind_switch_pipe(py::module_& units) {
  py::class_<SwitchPipe>(units, "SwitchPipe", "Switch middle pipe: property cache + concatenation (paper §6.2.1)")
      .def(py::init([](int64_t n_dests, int64_t prop_bytes, int64_t size_bytes, int64_t ways,
                       int64_t segment_bytes, int64_t max_line_bytes, int64_t mtu, int64_t upper_bytes,
                       int64_t delay) {
             ConcatConfig c;
             c.n_dests = n_dests;
             c.mtu = mtu;
             c.upper_bytes = upper_bytes;
             c.delay_cycles = delay;  // >= 0 or units.INFINITE_DELAY (checked by ConcatConfig::validate)
             SwitchPipe p(CacheConfig{size_bytes, ways, segment_bytes, max_line_bytes}, c);
             p.begin_kernel(prop_bytes);
             return p;
           }),
           py::kw_only(), py::arg("n_dests"), py::arg("prop_bytes"), py::arg("size_bytes"), py::arg("ways"),
           py::arg("segment_bytes"), py::arg("max_line_bytes"), py::arg("mtu"), py::arg("upper_bytes"),
           py::arg("delay_cycles"))
      .def("begin_kernel", &SwitchPipe::begin_kernel, py::arg("prop_bytes"))
      .def("process",
           [](SwitchPipe& p, const py::bytes& data, int64_t now) {
             const std::string_view s(data);
             p.process(reinterpret_cast<const uint8_t*>(s.data()), static_cast<int64_t>(s.size()), now);
           },
           "Process back-to-back packets arriving at cycle `now`", py::arg("data"), py::arg("now"))
      .def("advance", &SwitchPipe::advance, py::arg("now"))
      .def("flush_all", &SwitchPipe::flush_all, py::arg("now"))
      .def("take_streams",
           [](SwitchPipe& p) {
             py::dict out;
             for (uint16_t t = 0; t < 2; ++t)
               for (int64_t d = 0; d < p.concatenator().config().n_dests; ++d) {
                 auto& s = p.stream(t, static_cast<uint32_t>(d));
                 if (s.empty()) continue;
                 out[py::make_tuple(t, d)] = py::bytes(reinterpret_cast<const char*>(s.data()), s.size());
                 s.clear();
               }
             return out;
           },
           "{(type, dest): bytes of back-to-back packets}; clears them")
      .def_property_readonly("counters", [](const SwitchPipe& p) {
        const SwitchPipeCounters& c = p.counters;
        py::dict d;
        d["read_packets"] = c.read_packets;
        d["response_packets"] = c.response_packets;
        d["read_prs"] = c.read_prs;
        d["response_prs"] = c.response_prs;
        d["hits"] = c.hits;
        d["misses"] = c.misses;
        d["inserted"] = c.inserted;
        return d;
      });
}
