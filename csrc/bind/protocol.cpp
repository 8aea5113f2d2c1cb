// Python binding of the wire protocol (paper Fig. 6) -> hw_models._C.units.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "bind/bindings.h"
#include "units/errors.h"
#include "units/protocol.h"

namespace py = pybind11;
using namespace netsparse::units;

namespace {
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using U8 = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

py::bytes encode(int type, int64_t dest, int64_t len, const I64& src, const I64& tid, const I64& idx, const I64& id,
                 py::object payload, int64_t mtu, int64_t upper) {
  if (type != kReadType && type != kResponseType) throw ConfigInvalid("type must be 0 (read) or 1 (response)");
  if (len < 0 || len > UINT32_MAX) throw ConfigInvalid("len must fit a u32");
  const int64_t n = src.size();
  if (tid.size() != n || idx.size() != n || id.size() != n)
    throw ConfigInvalid("src, src_tid, idx and id must have one entry per PR");
  const int64_t max_prs = max_prs_per_packet(mtu, upper, static_cast<uint16_t>(type), static_cast<uint32_t>(len));
  if (n > max_prs)
    throw ConfigInvalid(std::to_string(n) + " PRs do not fit one packet (at most " + std::to_string(max_prs) +
                        " under MTU " + std::to_string(mtu) + ")");
  const uint8_t* pay = nullptr;
  U8 arr;
  if (type == kResponseType) {
    if (payload.is_none()) throw ConfigInvalid("a response packet needs a payload (n_prs x len bytes)");
    arr = U8::ensure(payload);
    if (!arr || arr.size() != n * len)
      throw ConfigInvalid("payload must hold n_prs x len = " + std::to_string(n * len) + " bytes");
    pay = arr.data();
  } else if (!payload.is_none()) {
    throw ConfigInvalid("a read packet carries no payload");
  }
  std::string out(static_cast<size_t>(kConcatHeaderBytes + n * pr_wire_bytes(type, len)), '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  encode_concat_header(p, static_cast<uint16_t>(type), static_cast<uint32_t>(dest), static_cast<uint32_t>(len),
                       static_cast<uint32_t>(n));
  p += kConcatHeaderBytes;
  for (int64_t i = 0; i < n; ++i)
    p += encode_pr(p, PR{static_cast<uint32_t>(src.at(i)), static_cast<uint16_t>(tid.at(i)),
                         static_cast<uint64_t>(idx.at(i)), static_cast<uint32_t>(id.at(i))},
                   pay ? pay + i * len : nullptr, static_cast<uint32_t>(len));
  return py::bytes(out);
}

py::dict view_to_dict(const PacketView& v) {
  py::dict d;
  d["type"] = v.type;
  d["dest"] = v.dest;
  d["len"] = v.len;
  d["n_prs"] = v.n_prs;
  I64 src(v.n_prs), tid(v.n_prs), idx(v.n_prs), id(v.n_prs);
  py::array_t<uint8_t> pay({static_cast<py::ssize_t>(v.n_prs), static_cast<py::ssize_t>(v.type ? v.len : 0)});
  for (int64_t i = 0; i < v.n_prs; ++i) {
    const PR pr = v.pr(i);
    src.mutable_at(i) = pr.src;
    tid.mutable_at(i) = pr.src_tid;
    idx.mutable_at(i) = static_cast<int64_t>(pr.idx);
    id.mutable_at(i) = pr.id;
    if (v.type == kResponseType) std::memcpy(pay.mutable_data(i, 0), v.payload(i), v.len);
  }
  d["src"] = src;
  d["src_tid"] = tid;
  d["idx"] = idx;
  d["id"] = id;
  d["payload"] = pay;
  return d;
}

py::dict decode(const py::bytes& data, int64_t mtu, int64_t upper) {
  const std::string_view s(data);
  return view_to_dict(decode_packet(reinterpret_cast<const uint8_t*>(s.data()), static_cast<int64_t>(s.size()),
                                    mtu - upper, false));
}

py::list decode_stream(const py::bytes& data, int64_t mtu, int64_t upper) {
  const std::string_view s(data);
  py::list out;
  for_each_packet(reinterpret_cast<const uint8_t*>(s.data()), static_cast<int64_t>(s.size()), mtu - upper,
                  [&](const PacketView& v) { out.append(view_to_dict(v)); });
  return out;
}
}  // namespace

void bind_protocol(py::module_& units) {
  units.attr("READ") = kReadType;
  units.attr("RESPONSE") = kResponseType;
  units.attr("CONCAT_HEADER_BYTES") = kConcatHeaderBytes;
  units.attr("PR_HEADER_BYTES") = kPRHeaderBytes;
  units.def("encode_packet", &encode, "Encode one Fig. 6 packet (little-endian)", py::arg("type"), py::arg("dest"),
            py::arg("len"), py::arg("src"), py::arg("src_tid"), py::arg("idx"), py::arg("id"),
            py::arg("payload") = py::none(), py::kw_only(), py::arg("mtu"), py::arg("upper_bytes"));
  units.def("decode_packet", &decode, "Decode and validate exactly one packet", py::arg("data"), py::kw_only(),
            py::arg("mtu"), py::arg("upper_bytes"));
  units.def("decode_stream", &decode_stream, "Decode back-to-back packets (deconcatenator)", py::arg("data"),
            py::kw_only(), py::arg("mtu"), py::arg("upper_bytes"));
  units.def("max_prs_per_packet", &max_prs_per_packet, "PRs that fit one packet", py::arg("mtu"),
            py::arg("upper_bytes"), py::arg("type"), py::arg("len"));
}
