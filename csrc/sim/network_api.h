#pragma once
// The interface between the system side and the network, in the style of ASTRA-sim's AstraNetworkAPI:
// the nodes (hosts, RIG units, NICs) and the extended switches' middle pipes only send packets into the
// network, take and free room in its buffers, and ask its routes; the network hands each packet back to
// the system side where it ends (Nodes::receive at a host, Switches::arrive at an extended ToR). Two
// implementations, picked once at set-up from the config (make_network):
//   PacketNetwork (network.h): every link serialises whole packets at line rate;
//   FlitNetwork (flit_network.h): the same, with NetCrafter flit links between switches (cfg.flit_layer).
// A call crosses the interface once per packet, never per flit or per idx.
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/context.h"

namespace netsparse::sim {

class Nodes;
class Switches;

// The routes and attachments the topology fixes (validated once): who hangs off which switch, each
// switch's ports, and the route table with each pair's alternative paths.
class Routes {
 public:
  Routes(const Topo& topo, int64_t hosts);  // validates the topology against the hosts
  int64_t route(int64_t src, int64_t dst, int32_t hop, uint16_t path) const {
    return topo_.routes[((path * hosts_ + src) * hosts_ + dst) * topo_.max_hops + hop];
  }
  // The path a new packet of pair (src, dst) follows: each takes the pair's next path in turn
  // (deterministic spraying over the spines); with one path per pair, always 0.
  uint16_t next_path(int64_t src, int64_t dst) {
    if (topo_.paths == 1) return 0;
    uint16_t& t = turn_[src * hosts_ + dst];
    const uint16_t p = t;
    t = static_cast<uint16_t>(p + 1 == topo_.paths ? 0 : p + 1);
    return p;
  }
  int64_t down_link(int64_t host) const { return down_link_[host]; }  // its ToR -> host link
  int64_t port(int64_t link) const { return out_port_[link]; }        // the link's port at its source switch
  const std::vector<int64_t>& hosts_of(int64_t s) const { return sw_hosts_[s]; }

 private:
  const Topo& topo_;
  int64_t hosts_;
  std::vector<int64_t> down_link_, out_port_;
  std::vector<std::vector<int64_t>> sw_hosts_;
  std::vector<uint16_t> turn_;  // per pair: the path its next packet takes (only with several paths)
};

class NetworkApi {
 public:
  explicit NetworkApi(SimContext& ctx) : ctx_(ctx), routes_(ctx.topo, ctx.nodes) {}
  virtual ~NetworkApi() = default;
  NetworkApi(const NetworkApi&) = delete;
  NetworkApi& operator=(const NetworkApi&) = delete;
  void attach(Nodes* nodes, Switches* switches) {
    nodes_ = nodes;
    switches_ = switches;
  }
  const Routes& routes() const { return routes_; }
  Routes& routes() { return routes_; }

  // The system side hands packet p to the network at t, on the first link of its way (out of a NIC or
  // a middle pipe).
  virtual void send(int64_t link, uint32_t p, int64_t t) = 0;
  // Room in vertex v's buffer: a middle pipe's packet takes it; the system side frees it at `at` when
  // it consumed the packet (the senders see the credit later).
  virtual void occupy(int64_t v, int64_t bytes) = 0;
  virtual void release(int64_t v, int64_t bytes, int64_t at) = 0;
  virtual int64_t used(int64_t v) const = 0;
  virtual void handle(const Event& e) = 0;  // the network's own events (tx_done, link_arrive, credit, ...)
  virtual void finish() = 0;               // its statistics into the report

 protected:
  SimContext& ctx_;
  Routes routes_;
  Nodes* nodes_ = nullptr;
  Switches* switches_ = nullptr;
};

// The implementation the config asks for (cfg.flit_layer: FlitNetwork, else PacketNetwork); obs.log_hops
// fills ctx.res.hops, obs.link_stats_bin_ps ctx.res.link_stats.
std::unique_ptr<NetworkApi> make_network(SimContext& ctx, const Observe& obs);

}  // namespace netsparse::sim
