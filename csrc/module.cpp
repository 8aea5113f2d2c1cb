// netsparse_torch._C: the CPU tensor kernels (the hardware units are hw_models._C, csrc/bind/module.cpp).
// torch/python.h (the pybind11 casters of tensors) and not torch/extension.h, which adds the whole C++
// frontend (nn, optim, data): this file parsed in 19 s instead of 31 s, on the build's critical path.
#include <ATen/Parallel.h>
#include <torch/python.h>

#include "kernels_attention.h"
#include "kernels_sparse_ops.h"
#include "keyed_dropout.h"
#include "spmm.h"
#include "units/errors.h"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "netsparse_torch CPU kernels: SpMM, SDDMM, attention, keyed dropout";
  // The kernels' typed errors (units/errors.h), as hw_models._C maps them; local to this module, so the
  // hardware models' own translators stay the ones their functions use.
  const py::module_ errors = py::module_::import("hw_models.errors");
  py::register_local_exception<netsparse::units::ConfigInvalid>(
      m, "ConfigInvalid", py::make_tuple(errors.attr("ConfigError"), py::handle(PyExc_ValueError)));
  // The tensor kernels release the GIL: another thread (a RIG halo gather) runs while they compute.
  const auto nogil = py::call_guard<py::gil_scoped_release>();
  m.def("spmm", &netsparse::spmm, "CSR x dense on CPU", py::arg("crow"), py::arg("col"), py::arg("val"),
        py::arg("B"), py::arg("isa") = "auto", nogil);
  m.def("cpu_isa", &netsparse::cpu_isa, "The SIMD level spmm uses here: avx512, avx2 or generic");
  m.def("sddmm", &netsparse::sddmm, "out[p] = val[p] * <X[row p], Y[col p]> on CPU", py::arg("crow"), py::arg("col"),
        py::arg("X"), py::arg("Y"), py::arg("val") = py::none(), nogil);
  m.def("gather_rows", &netsparse::gather_rows, "out[i] = B[idx[i]] on CPU", py::arg("B"), py::arg("idx"), nogil);
  m.def("scatter_add_rows", &netsparse::scatter_add_rows, "out[idx[i]] += src[i] on CPU (deterministic)",
        py::arg("src"), py::arg("idx"), py::arg("n_out"), nogil);
  m.def("csr_transpose", &netsparse::csr_transpose, "CSR of the transpose", py::arg("crow"), py::arg("col"),
        py::arg("val"), py::arg("n_cols"), nogil);
  m.def("keyed_dropout_mask", &netsparse::keyed_dropout_mask,
        "Counter-based dropout mask (0 or 1/(1-p)) keyed on (seed, epoch, layer, node id, feature)", py::arg("x"),
        py::arg("node_ids"), py::arg("p"), py::arg("seed"), py::arg("epoch"), py::arg("layer"), nogil);
  m.def("keyed_edge_dropout_mask", &netsparse::keyed_edge_dropout_mask,
        "Counter-based attention dropout mask keyed on (seed, epoch, layer, source id, target id, head)",
        py::arg("like"), py::arg("crow"), py::arg("col"), py::arg("row_ids"), py::arg("col_ids"), py::arg("p"),
        py::arg("seed"), py::arg("epoch"), py::arg("layer"), nogil);
  m.def("edge_softmax", &netsparse::edge_softmax,
        "GAT scores LeakyReLU(src[col] + dst[row]) and their per-row softmax, weighted by mult", py::arg("crow"),
        py::arg("col"), py::arg("mult"), py::arg("src"), py::arg("dst"), py::arg("negative_slope"), nogil);
  m.def("edge_softmax_backward", &netsparse::edge_softmax_backward, "(d_src, d_dst) of edge_softmax",
        py::arg("crow"), py::arg("col"), py::arg("alpha"), py::arg("grad"), py::arg("src"), py::arg("dst"),
        py::arg("negative_slope"), py::arg("t_crow"), py::arg("t_perm"), nogil);
  m.def("spmm_heads", &netsparse::spmm_heads, "Multi-head SpMM: one value per nonzero and head", py::arg("crow"),
        py::arg("col"), py::arg("alpha"), py::arg("B"), py::arg("perm") = py::none(), nogil);
  m.def("sddmm_heads", &netsparse::sddmm_heads, "Multi-head SDDMM: one dot product per nonzero and head",
        py::arg("crow"), py::arg("col"), py::arg("X"), py::arg("Y"), py::arg("heads"), nogil);
  m.def("num_threads", [] { return at::get_num_threads(); });
}
