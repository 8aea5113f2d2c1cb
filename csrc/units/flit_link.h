#pragma once
// NetCrafter (ISCA'25) link layer: one egress link that carries packets as fixed-size flits, with
// flit stitching, flit pooling (and selective pooling), trimming and sequencing.
//
// Time is a virtual cycle counter; the link sends one flit per cycle. The unit is deterministic and
// single-pass over the packet stream, because it sits in the simulator's hot loop.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace netsparse::units {

// No value lives here: hw_models/seeds/netcrafter.py (LinkConfig) sets every field and names each value's
// source (NetCrafter or our assumption); fields are value-initialised (zero, every mechanism off) until then.
struct FlitLinkConfig {
  int64_t flit_bytes{};  // flit size
  // ID+Size overhead carried by a *piece* (a packet's tail stitched into another packet's flit). A whole
  // stitched packet carries its own header and needs no extra bytes.
  int64_t piece_overhead{};
  bool stitching{};
  // Flit pooling window W in cycles: a partially filled flit waits up to W cycles for a stitching
  // candidate. 0 disables pooling.
  int64_t pool_cycles{};
  // Selective pooling: packets of this class never wait in the pool, and a pooled flit that takes
  // one of them leaves at once. -1 = no exempt class.
  int64_t no_pool_class{};
  // Sequencing: the egress queue serves lower class numbers first (class 0 = highest priority);
  // off = arrival order.
  bool sequencing{};
  // Trimming: a trimmable response sends only its needed sector, rounded up to trim_granularity.
  bool trimming{};
  int64_t trim_granularity{};
  // How many queued same-destination packets a newly opened flit examines at the egress queue.
  int64_t stitch_window{};

  void validate() const;
};

// One packet at the link's egress. `useful` is the payload actually needed (-1 = not trimmable).
struct FlitPacket {
  int64_t arrival = 0;
  int64_t dest = 0;
  int64_t header = 0;
  int64_t payload = 0;
  int64_t useful = -1;
  int64_t cls = 0;
};

struct FlitLinkStats {
  int64_t packets = 0;
  int64_t flits = 0;             // flits on the wire
  int64_t wire_bytes = 0;        // flits * flit_bytes
  int64_t needed_bytes = 0;      // header + payload actually sent (after trimming)
  int64_t overhead_bytes = 0;    // ID+Size bytes of stitched pieces
  int64_t padding_bytes = 0;     // wire - needed - overhead
  int64_t unstitched_flits = 0;  // sum of ceil(needed / flit) = flits without stitching
  int64_t stitched_packets = 0;  // packets whose whole body or tail rode in another packet's flit
  int64_t stitched_flits = 0;    // flits carrying bytes of two or more packets
  int64_t pieces = 0;            // tail pieces stitched (each paid piece_overhead)
  int64_t trimmed_bytes = 0;     // payload bytes removed by trimming
  int64_t last_cycle = 0;        // cycle after the last flit left
};

// Bytes padded to whole flits.
int64_t flits_for(int64_t bytes, int64_t flit_bytes);

// Runs the stream through the link. Packets must be sorted by arrival. If `done` is non-null it
// receives, per packet, the cycle after the last flit holding any of its bytes left.
FlitLinkStats run_flit_link(const FlitLinkConfig& cfg, const std::vector<FlitPacket>& packets,
                            std::vector<int64_t>* done);

class FlitLinkSim;

// The same link, fed one packet at a time (the simulator's event loop, closed loop): push each packet
// when it reaches the egress, advance() to the current cycle, and take completed packets. run_flit_link
// is this state with every packet pushed up front, so there is one implementation.
class FlitLinkState {
 public:
  explicit FlitLinkState(const FlitLinkConfig& cfg);  // validates cfg
  ~FlitLinkState();
  FlitLinkState(FlitLinkState&&) noexcept;
  FlitLinkState& operator=(FlitLinkState&&) noexcept;
  // Adds a packet arriving at p.arrival (not before now() or an earlier packet); returns its id 0, 1, ...
  int64_t push(const FlitPacket& p);
  // Runs every step that starts before cycle `until` (no packet arrives before `until` unless pushed).
  void advance(int64_t until);
  // A cycle after now() and no later than the next completion if nothing else arrives; INT64_MAX if idle.
  int64_t next_event();
  int64_t now() const;
  // (id, cycle after the last flit holding its bytes left) of packets completed since the caller last
  // cleared the vector, in completion order.
  std::vector<std::pair<int64_t, int64_t>>& completed();
  FlitLinkStats stats() const;  // totals so far; last_cycle = now()

 private:
  std::unique_ptr<FlitLinkSim> sim_;
  int64_t last_arrival_ = 0;
};

}  // namespace netsparse::units
