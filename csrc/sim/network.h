#pragma once
// The packet network (ASTRA-sim's network layer), one implementation of NetworkApi: links that
// serialise whole packets, their egress queues, the vertices' buffers with credit flow control, and
// plain switches forwarding on their route. A packet that reaches a host goes to the nodes; one that
// reaches an extended ToR goes to its middle pipes. FlitNetwork (flit_network.h) builds on it.
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "sim/link_stats.h"
#include "sim/network_api.h"

namespace netsparse::sim {

// A vertex's buffer as its senders see it (credit flow control with delayed credit returns).
struct Pool {
  int64_t avail = 0, used = 0, peak = 0;
  int64_t credit_ps = 0;  // a credit reaches the senders this long after the bytes left
  std::deque<std::pair<int64_t, int64_t>> returns;  // (time the senders see it, bytes), ascending
  std::vector<int64_t> blocked;  // links waiting for credit
  int64_t armed = kNever;
};

class PacketNetwork : public NetworkApi {
 public:
  PacketNetwork(SimContext& ctx, bool log_hops);
  void send(int64_t link, uint32_t p, int64_t t) override;
  void occupy(int64_t v, int64_t bytes) override;
  void release(int64_t v, int64_t bytes, int64_t at) override;
  int64_t used(int64_t v) const override { return pool_[v].used; }
  void handle(const Event& e) override;  // tx_done, link_arrive, credit
  void finish() override;
  void record_link_stats(int64_t bin_ps) { stats_ = std::make_unique<LinkStats>(ctx_.topo.link_src.size(), bin_ps); }

 protected:
  // The head of link's queue may go on the link now: whole packets here, flits in FlitNetwork.
  virtual void start(int64_t link, int64_t t) { serialise(link, t); }
  void serialise(int64_t link, int64_t t);
  void leave_queue(int64_t link, int64_t t);
  void arrive(uint32_t p, int64_t link, int64_t t);

  std::vector<std::deque<uint32_t>> out_q_;  // per link: its egress queue
  std::vector<int64_t> deliver_ps_;          // link latency, plus switch latency when it ends at a switch

 private:
  void enqueue(int64_t link, uint32_t p, int64_t t);
  bool credit(int64_t link, int64_t wire, int64_t t);
  void refresh(Pool& pl, int64_t t);
  void retry_blocked(int64_t v, int64_t t);
  void hop(Hops& h, int64_t link, int64_t t) const;
  bool waits_for_credit(int64_t link) const {
    return ctx_.topo.link_dst[link] < ctx_.nodes || ctx_.topo.link_src[link] < ctx_.nodes;
  }

  std::vector<std::deque<Timed>> in_flight_;  // per link: packets on it, by arrival time
  std::vector<int64_t> link_free_;    // when the packet on the link has been serialised
  std::vector<uint8_t> tx_armed_, link_blocked_;
  std::vector<Pool> pool_;  // per vertex
  // The hop log (tests): per packet id its serial and open hop row, by the log's rows.
  bool log_ = false;
  int64_t serials_ = 0;
  std::vector<int64_t> serial_, open_row_;
  std::unique_ptr<LinkStats> stats_;  // stats=links only
};

}  // namespace netsparse::sim
