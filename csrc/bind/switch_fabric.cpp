// Switch-fabric client helper -> hw_models._C.units.
// prs_by_owner counts the PRs of a frame per owner of their idx, so a rank's RIG watchdog can name the
// peers whose responses are missing (read PRs sent per owner - response PRs received per owner)
// without a Python loop per packet or PR.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "bind/bindings.h"
#include "units/errors.h"
#include "units/protocol.h"

namespace py = pybind11;
using namespace netsparse::units;

namespace {
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

// owner o holds rows [row_bounds[o], row_bounds[o + 1]); returns PRs per owner (int64[n_owners]).
py::array_t<int64_t> prs_by_owner(const py::bytes& data, const I64& row_bounds, int64_t mtu, int64_t upper) {
  const int64_t n_owners = row_bounds.size() - 1;
  if (n_owners < 1) throw ConfigInvalid("prs_by_owner: row_bounds needs at least 2 entries");
  const int64_t* b = row_bounds.data();
  for (int64_t o = 0; o < n_owners; ++o)
    if (b[o] > b[o + 1]) throw ConfigInvalid("prs_by_owner: row_bounds must be non-decreasing");
  std::vector<int64_t> out(static_cast<size_t>(n_owners), 0);
  const std::string_view s(data);
  for_each_packet(reinterpret_cast<const uint8_t*>(s.data()), static_cast<int64_t>(s.size()), mtu - upper,
                  [&](const PacketView& v) {
                    for (int64_t i = 0; i < v.n_prs; ++i) {
                      const auto idx = static_cast<int64_t>(v.pr(i).idx);
                      if (idx < b[0] || idx >= b[n_owners])
                        throw ConfigInvalid("prs_by_owner: idx " + std::to_string(idx) +
                                            " outside the row bounds");
                      ++out[static_cast<size_t>(std::upper_bound(b, b + n_owners + 1, idx) - b - 1)];
                    }
                  });
  return py::array_t<int64_t>(n_owners, out.data());
}
}  // namespace

void bind_switch_fabric(py::module_& units) {
  units.def("prs_by_owner", &prs_by_owner, "PRs of a frame per owner of their idx (row_bounds: n_owners + 1)",
            py::arg("data"), py::arg("row_bounds"), py::kw_only(), py::arg("mtu"),
            py::arg("upper_bytes"));
}
