// Python binding of the header model (Table 5 / Fig. 6 sizes) -> hw_models._C.units.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>


#include "bind/bindings.h"
#include "units/errors.h"
#include "units/header_model.h"

namespace py = pybind11;
using namespace netsparse::units;

void bind_header_model(py::module_& units) {
  py::class_<HeaderSizes>(units, "HeaderSizes",
                          "Header sizes per layer (the modeled Table 5 sizes: hw_models.unit_args.header_sizes)")
      .def(py::init([](int64_t upper, int64_t concat, int64_t pr) {
             HeaderSizes h{upper, concat, pr};
             h.validate();
             return h;
           }),
           py::kw_only(), py::arg("upper"), py::arg("concat"), py::arg("pr"))
      .def_static("wire", &HeaderSizes::wire, "Encoded Fig. 6 format: the given upper layers, concatenation 14, PR 18 B",
                  py::arg("upper"))
      .def_readonly("upper", &HeaderSizes::upper)
      .def_readonly("concat", &HeaderSizes::concat)
      .def_readonly("pr", &HeaderSizes::pr)
      .def("__repr__", [](const HeaderSizes& h) {
        return "HeaderSizes(upper=" + std::to_string(h.upper) + ", concat=" + std::to_string(h.concat) +
               ", pr=" + std::to_string(h.pr) + ")";
      });
  units.def(
      "packet_bytes",
      [](const HeaderSizes& h, int64_t n_prs, bool response, int64_t len) {
        const ByteCount b = packet_bytes(h, n_prs, response, len);
        return py::make_tuple(b.header, b.payload);
      },
      "(header, payload) bytes of one packet", py::arg("sizes"), py::arg("n_prs"), py::arg("response"), py::arg("len"));
  units.def(
      "stream_bytes",
      [](const HeaderSizes& h, py::array_t<int64_t, py::array::c_style | py::array::forcecast> n_prs,
         py::array_t<uint8_t, py::array::c_style | py::array::forcecast> response, int64_t len) {
        if (n_prs.size() != response.size())
          throw ConfigInvalid("n_prs and response need one entry per packet");
        const ByteCount b = stream_bytes(h, n_prs.data(), response.data(), n_prs.size(), len);
        return py::make_tuple(b.header, b.payload);
      },
      "(header, payload) bytes of a packet stream", py::arg("sizes"), py::arg("n_prs"), py::arg("response"),
      py::arg("len"));
  units.def("sa_header_share", &sa_header_share, "Header share of SA traffic (paper Table 3)", py::arg("sizes"),
            py::arg("k"), py::arg("elem_bytes"));
}
