#pragma once
// One node's NetSparse SmartNIC pipeline (paper §5-6.1): client RIG units sharing the node's Idx
// Filter, a concatenator for read packets, server RIG units and a concatenator for response packets.
//
// Round-based use (what the training path, the switch service and the benchmark do):
//   begin_kernel(prop_bytes, halo, local)  invalidates the Idx Filter, sets the property size
//   submit(idxs, slots)                    splits into RIG batches (commands) dealt to client units
//   pump_reads(now)                        every client unit issues until it stalls or finishes;
//                                          read PRs are concatenated and encoded, and the round
//                                          ends with a flush; read packets are in stream(0, dest)
//   serve(bytes)                           server side: read packets in, response packets out in
//                                          stream(1, dest) (flushed at the end of the call)
//   absorb(bytes)                          client side: response packets fill the halo buffer
//   done()                                 every command completed
// Timing inside a round: the node's virtual clock advances cycles_per_pr per read PR issued (our
// assumption: the NIC emits one PR per cycle), so concatenation delays act between PRs of a round.
#include <cstdint>
#include <memory>
#include <vector>

#include "units/concatenator.h"
#include "units/rig_unit.h"

namespace netsparse::units {

// No value lives here: the binding (csrc/bind/rig_node.cpp) sets every field from its arguments;
// fields are value-initialised (zero) until then.
struct RigNodeConfig {
  int64_t n_units{};           // RIG units per node (paper §5; HardwareParams' snic.rig_units)
  int64_t n_client_units{};    // of them clients, 1..n_units-1 (snic.rig_client_units; hw_models.unit_args.rig_split)
  int64_t batch_size{};        // nonzeros per RIG command (paper §5.1), or kAutoBatch / kWholeStreamBatch
  int64_t pending_capacity{};  // Pending PR Table entries per client unit (paper §5.3)
  bool filter{};
  bool coalesce{};
  int64_t cycles_per_pr{};     // virtual cycles per read PR in a round (our assumption: 1)
  ConcatConfig concat;         // n_dests is set to the node count
  // The simulator's node (csrc/sim/node.*), which times the units itself: one NIC concatenator
  // carries reads and responses (nic()) and logs what it flushes for the event loop, and the Idx
  // Filter keeps no halo slots (every idx lands in slot 0; only timing matters). The training path
  // and the switch service leave it off.
  bool event_driven{};
};

struct RigNodeStats {
  RigCounters rig;
  int64_t served_prs = 0;
  int64_t packets[2] = {0, 0}, prs[2] = {0, 0}, encoded_bytes[2] = {0, 0};
};

class RigNode {
 public:
  RigNode(uint32_t node, std::vector<int64_t> row_bounds, RigNodeConfig cfg);

  void begin_kernel(int64_t prop_bytes, uint8_t* halo, int64_t halo_bytes, const uint8_t* local, int64_t local_bytes);
  // Validates everything first (no partial state on bad input). Arrays must outlive the kernel
  // (the binding keeps copies).
  void submit(const int64_t* idxs, const int64_t* slots, int64_t n);
  void pump_reads(int64_t now);
  void serve(const uint8_t* buf, int64_t n);
  void absorb(const uint8_t* buf, int64_t n);
  bool done() const;
  int64_t pending() const;
  int64_t clock() const { return clock_; }

  std::vector<uint8_t>& stream(uint16_t type, uint32_t dest) {
    return (type == kReadType || cfg_.event_driven ? reads_ : responses_).stream(type, dest);
  }
  RigNodeStats stats() const;
  void reset_stats();  // zero every counter (e.g. per layer / direction); the clock keeps running
  const RigNodeConfig& config() const { return cfg_; }
  const NodeMap& map() const { return map_; }
  // The parts an event-driven model (the simulator) drives one at a time.
  RigContext& context() { return ctx_; }
  std::vector<RigClientUnit>& clients() { return clients_; }
  const std::vector<RigClientUnit>& clients() const { return clients_; }
  std::vector<RigServerUnit>& servers() { return servers_; }
  Concatenator& nic() { return reads_; }  // with event_driven: reads and responses
  uint32_t node() const { return ctx_.node; }
  int64_t n_client_units() const { return static_cast<int64_t>(clients_.size()); }

 private:
  RigNodeConfig cfg_;
  NodeMap map_;
  IdxFilter filter_;
  RigContext ctx_;
  std::vector<RigClientUnit> clients_;
  std::vector<RigServerUnit> servers_;
  Concatenator reads_, responses_;
  int64_t next_client_ = 0, next_server_ = 0;
  int64_t clock_ = 0;
  int64_t halo_bytes_ = 0;
  bool in_kernel_ = false;
};

}  // namespace netsparse::units
