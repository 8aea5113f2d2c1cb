// The one Python module of the extension: each unit registers its own bindings.
#include <torch/extension.h>

#include "spmm.h"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "netsparse_torch C++ units: CPU SpMM, NetSparse hardware units and the simulator core";
  m.def("spmm", &netsparse::spmm, "CSR x dense on CPU", py::arg("crow"), py::arg("col"), py::arg("val"),
        py::arg("B"), py::arg("isa") = "auto");
  m.def("cpu_isa", &netsparse::cpu_isa, "The SIMD level spmm uses here: avx512, avx2 or generic");
  m.def("csr_transpose", &netsparse::csr_transpose, "CSR of the transpose", py::arg("crow"), py::arg("col"),
        py::arg("val"), py::arg("n_cols"));
  m.def("num_threads", [] { return at::get_num_threads(); });
}
