#pragma once
// Packets in flight: the Fig. 6 bytes the units produce and consume, their wire sizes (header model)
// and where each is on its route. Ids are recycled; take() turns a concatenator's flushed packets
// into ids.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/breakdown.h"
#include "units/concatenator.h"
#include "units/header_model.h"
#include "units/protocol.h"

namespace netsparse::sim {

// The fields a hop touches come first, with the hops' charges (one cache line where the stride allows).
struct Packet {
  uint16_t type = 0;
  uint16_t path = 0;       // which of its pair's alternative paths (Topo::paths) it follows
  uint32_t n_prs = 0, dst = 0;
  int32_t hop = 0;         // index of the link it is on (or arrived by) in that row
  int64_t route_src = -1;  // host whose path table row routes it; -1 = direct ToR -> host link
  int64_t at = -1;         // vertex whose buffer holds it (-1: none, or the host's Tx buffer)
  int64_t wire = 0;
  Hops h;                  // what its hops add to its PRs' journeys (breakdown.h)
  int64_t header = 0, payload = 0;
  std::vector<uint8_t> bytes;  // Fig. 6 encoding, as the units produce and consume it
};

class Packets {
 public:
  Packets(int64_t nodes, units::HeaderSizes hs, int64_t prop_bytes, int64_t max_packet_bytes)
      : nodes_(nodes), hs_(hs), prop_bytes_(prop_bytes), max_bytes_(max_packet_bytes), offs_(2 * nodes, 0) {}
  Packet& operator[](uint32_t p) { return pkts_[p]; }
  void free(uint32_t p) { free_.push_back(p); }
  int64_t max_wire() const { return max_wire_; }
  // The packet's Fig. 6 view (its bytes hold exactly one packet).
  units::PacketView view(uint32_t p) const {
    const Packet& k = pkts_[p];
    return units::decode_packet(k.bytes.data(), static_cast<int64_t>(k.bytes.size()), max_bytes_, false);
  }
  // Hands every packet the concatenator flushed since the last call to f (as a packet id), in flush order.
  template <class F>
  void take(units::Concatenator& c, F&& f);

 private:
  uint32_t make(const units::PacketView& v, std::vector<uint8_t>* whole);

  int64_t nodes_;
  units::HeaderSizes hs_;
  int64_t prop_bytes_, max_bytes_;
  int64_t max_wire_ = 0;
  std::vector<Packet> pkts_;
  std::vector<uint32_t> free_;
  std::vector<int64_t> offs_, touched_;  // per (type, dest) stream: bytes taken so far this call
};

template <class F>
void Packets::take(units::Concatenator& c, F&& f) {
  auto& log = c.log();
  if (log.empty()) return;
  touched_.clear();
  for (const units::PacketRecord& r : log) {
    const int64_t q = static_cast<int64_t>(r.type) * nodes_ + r.dest;
    auto& s = c.stream(r.type, r.dest);
    if (offs_[q] == 0) touched_.push_back(q);
    const units::PacketView v = units::decode_packet(s.data() + offs_[q], static_cast<int64_t>(s.size()) - offs_[q],
                                                     c.max_packet_bytes(), true);
    const bool whole = offs_[q] == 0 && v.bytes == static_cast<int64_t>(s.size());
    offs_[q] += v.bytes;
    f(make(v, whole ? &s : nullptr));
  }
  for (int64_t q : touched_) {
    c.stream(static_cast<uint16_t>(q / nodes_), static_cast<uint32_t>(q % nodes_)).clear();
    offs_[q] = 0;
  }
  log.clear();
}

}  // namespace netsparse::sim
