#pragma once
// The network (ASTRA-sim's network layer): links, their egress queues, the vertices' buffers with
// credit flow control, routing, and the NetCrafter flit layer on switch -> switch links. A packet that
// reaches a host goes to the nodes; one that reaches an extended ToR goes to its middle pipes; a plain
// switch forwards it on its route.
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "sim/context.h"
#include "units/flit_link.h"

namespace netsparse::sim {

class Nodes;
class Switches;

// A vertex's buffer as its senders see it (credit flow control with delayed credit returns).
struct Pool {
  int64_t avail = 0, used = 0, peak = 0;
  int64_t credit_ps = 0;  // a credit reaches the senders this long after the bytes left
  std::deque<std::pair<int64_t, int64_t>> returns;  // (time the senders see it, bytes), ascending
  std::vector<int64_t> blocked;  // links waiting for credit
  int64_t armed = kNever;
};

class Network {
 public:
  explicit Network(SimContext& x);  // validates the topology against the hosts
  void attach(Nodes* nodes, Switches* switches) {
    nodes_ = nodes;
    switches_ = switches;
  }
  void handle(const Event& e);  // tx_done, link_arrive, arrive, credit, flit_tick
  void enqueue(int64_t link, uint32_t p, int64_t t);
  void occupy(int64_t v, int64_t bytes);
  void release(int64_t v, int64_t bytes, int64_t at);
  int64_t used(int64_t v) const { return pool_[v].used; }
  int64_t route(int64_t src, int64_t dst, int32_t hop) const {
    return x_.topo.routes[(src * x_.nodes + dst) * x_.topo.max_hops + hop];
  }
  int64_t down_link(int64_t host) const { return down_link_[host]; }  // its ToR -> host link
  int64_t port(int64_t link) const { return out_port_[link]; }        // the link's port at its source switch
  const std::vector<int64_t>& hosts_of(int64_t s) const { return sw_hosts_[s]; }
  void finish();  // the flit units' statistics into the report

 private:
  void try_start(int64_t link, int64_t t);
  bool credit(int64_t link, int64_t wire, int64_t t);
  void leave_queue(int64_t link, int64_t t);
  void refresh(Pool& pl, int64_t t);
  void retry_blocked(int64_t v, int64_t t);
  void arrive(uint32_t p, int64_t link, int64_t t);
  void hop(Hops& h, int64_t link, int64_t t) const;
  void flit_setup();
  void flit_start(int64_t link, int64_t t);
  void flit_tick(int64_t link, int64_t t);

  SimContext& x_;
  Nodes* nodes_ = nullptr;
  Switches* switches_ = nullptr;
  std::vector<int64_t> down_link_, out_port_;
  std::vector<std::vector<int64_t>> sw_hosts_;
  std::vector<std::deque<uint32_t>> out_q_;
  std::vector<std::deque<Timed>> in_flight_;  // per link: packets on it, by arrival time
  std::vector<int64_t> link_free_;    // when the packet on the link has been serialised
  std::vector<int64_t> deliver_ps_;   // link latency, plus switch latency when it ends at a switch
  std::vector<uint8_t> tx_armed_, link_blocked_;
  std::vector<Pool> pool_;  // per vertex
  // Flit layer: per link its slot in res.flit_links or -1; per slot the flit unit's state, the
  // simulator packet of each flit-unit packet id, the flit clock and the armed tick.
  std::vector<int64_t> flit_slot_;
  std::vector<units::FlitLinkState> flit_state_;
  std::vector<std::vector<uint32_t>> flit_ids_;
  std::vector<Clock> flit_clock_;
  std::vector<int64_t> flit_armed_;
};

}  // namespace netsparse::sim
