// Frame helpers of the gRPC switch service -> hw_models._C.units.
// The service hands whole frames (back-to-back Fig. 6 packets) to C++ so that no Python loop runs
// per PR: scan_frame validates a frame completely *before* it reaches the SwitchPipe (whose
// process() may throw half-way), split_frame routes packets to output ports by destination.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bind/bindings.h"
#include "units/errors.h"
#include "units/protocol.h"
#include "units/switch_pipe.h"

namespace py = pybind11;
using namespace netsparse::units;

namespace {
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

std::string_view view_of(const py::bytes& b) { return std::string_view(b); }

// Validates every packet of a frame. Returns (packets, read_prs, response_prs). Errors are the typed
// PacketError kinds of units/errors.h, which the service counts by kind.
py::tuple scan_frame(const py::bytes& data, int64_t n_dests, int64_t prop_bytes, int64_t expected_src, int64_t mtu,
                     int64_t upper) {
  const std::string_view s = view_of(data);
  const auto* buf = reinterpret_cast<const uint8_t*>(s.data());
  if (s.empty()) throw MalformedPacket("malformed packet: empty frame");
  int64_t packets = 0, prs[2] = {0, 0};
  for_each_packet(buf, static_cast<int64_t>(s.size()), mtu - upper, [&](const PacketView& v) {
    if (v.dest >= n_dests)
      throw UnknownDestination("unknown destination: node " + std::to_string(v.dest) + " (the fabric has " +
                                  std::to_string(n_dests) + " nodes)");
    if (v.len != prop_bytes)
      throw WrongPropertySize("wrong property size: packet len " + std::to_string(v.len) +
                                  " differs from the configured property size " + std::to_string(prop_bytes));
    for (int64_t i = 0; i < v.n_prs; ++i) {
      const uint32_t src = load_u32(v.prs + i * v.pr_stride());
      if (src >= n_dests) throw BadSource("bad source: PR source " + std::to_string(src) + " unknown");
      if (v.type == kReadType && expected_src >= 0 && src != expected_src)
        throw BadSource("bad source: read PR source " + std::to_string(src) + " is not the attached node " +
                                    std::to_string(expected_src));
    }
    ++packets;
    prs[v.type] += v.n_prs;
  });
  return py::make_tuple(packets, prs[0], prs[1]);
}

// Splits a (validated) frame into one byte string per output port: port_of_dest[d] is the port of
// destination d; with by_type the port is the packet type instead (0 read, 1 response; n_ports = 2).
// Returns (list[bytes] per port, packets per port, PRs per port).
py::tuple split_frame(const py::bytes& data, const I64& port_of_dest, int64_t n_ports, bool by_type, int64_t mtu,
                      int64_t upper) {
  const std::string_view s = view_of(data);
  const auto* buf = reinterpret_cast<const uint8_t*>(s.data());
  std::vector<std::string> out(static_cast<size_t>(n_ports));
  std::vector<int64_t> packets(static_cast<size_t>(n_ports), 0), prs(static_cast<size_t>(n_ports), 0);
  const int64_t n_dests = port_of_dest.size();
  for_each_packet(buf, static_cast<int64_t>(s.size()), mtu - upper, [&](const PacketView& v) {
    if (!by_type && v.dest >= n_dests)
      throw UnknownDestination("unknown destination: node " + std::to_string(v.dest));
    const int64_t port = by_type ? static_cast<int64_t>(v.type) : port_of_dest.at(v.dest);
    if (port < 0 || port >= n_ports)
      throw UnknownDestination("unknown destination: node " + std::to_string(v.dest) + " has no port");
    out[port].append(reinterpret_cast<const char*>(v.prs) - kConcatHeaderBytes, static_cast<size_t>(v.bytes));
    ++packets[port];
    prs[port] += v.n_prs;
  });
  py::list streams;
  for (auto& o : out) streams.append(py::bytes(o));
  return py::make_tuple(streams, py::array_t<int64_t>(n_ports, packets.data()), py::array_t<int64_t>(n_ports, prs.data()));
}
}  // namespace

void bind_switch_service(py::module_& units) {
  units.def("scan_frame", &scan_frame,
            "Validate a frame of back-to-back packets; returns (packets, read_prs, response_prs)", py::arg("data"),
            py::kw_only(), py::arg("n_dests"), py::arg("prop_bytes"), py::arg("expected_src") = -1,
            py::arg("mtu"), py::arg("upper_bytes"));
  units.def("split_frame", &split_frame,
            "Route a frame's packets to ports by destination; returns (list[bytes], packets, prs) per port",
            py::arg("data"), py::kw_only(), py::arg("port_of_dest") = I64(0), py::arg("n_ports"), py::arg("by_type") = false,
            py::arg("mtu"), py::arg("upper_bytes"));
  units.def(
      "switch_pipe_unit_counters",
      [](SwitchPipe& p) {
        const PropertyCache& c = p.cache();
        py::dict d;
        d["hits"] = c.hits;
        d["misses"] = c.misses;
        d["inserts"] = c.inserts;
        d["evictions"] = c.evictions;
        const Concatenator& k = p.concatenator();
        d["concat_packets"] = k.packets[0] + k.packets[1];
        d["concat_prs"] = k.prs[0] + k.prs[1];
        return d;
      },
      "Counters of a SwitchPipe's cache (property hits/misses, lines inserted/evicted) and concatenator (packets, PRs)", py::arg("pipe"));
}
