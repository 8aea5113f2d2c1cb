#pragma once
// The packet network with NetCrafter (ISCA'25) flit links between switches (cfg.flit_layer; ToR <->
// spine in a leaf-spine: the inter-rack links), the second implementation of NetworkApi. Each such
// link is a units::FlitLinkState: a packet enters its egress queue (class 0 = read PRs, 1 = responses)
// and arrives at the next switch link latency after the flit holding its last byte left (stitching,
// pooling and sequencing decide when). Links into and out of hosts stay packet links.
#include <cstdint>
#include <vector>

#include "sim/network.h"
#include "units/flit_link.h"

namespace netsparse::sim {

class FlitNetwork final : public PacketNetwork {
 public:
  FlitNetwork(SimContext& ctx, bool log_hops);
  void handle(const Event& e) override;  // arrive, flit_tick; the rest as the packet network
  void finish() override;                // the flit units' statistics into the report

 private:
  void start(int64_t link, int64_t t) override;
  void flit_start(int64_t link, int64_t t);
  void flit_tick(int64_t link, int64_t t);

  // Per link its slot in res.flit_links or -1; per slot the flit unit's state, the simulator packet of
  // each flit-unit packet id, the flit clock and the armed tick.
  std::vector<int64_t> slot_;
  std::vector<units::FlitLinkState> state_;
  std::vector<std::vector<uint32_t>> ids_;
  std::vector<Clock> clock_;
  std::vector<int64_t> armed_;
};

}  // namespace netsparse::sim
