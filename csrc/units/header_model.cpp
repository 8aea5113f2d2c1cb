// Header model (paper Table 5 sizes, Fig. 6 wire sizes): byte accounting of packet streams.
#include "units/header_model.h"

#include <string>

#include "units/errors.h"

namespace netsparse::units {

void HeaderSizes::validate() const {
  if (upper < 0 || concat < 0 || pr < 0)
    throw ConfigInvalid("header sizes must be >= 0 (upper " + std::to_string(upper) + ", concat " +
                        std::to_string(concat) + ", pr " + std::to_string(pr) + ")");
}

ByteCount packet_bytes(const HeaderSizes& h, int64_t n_prs, bool response, int64_t len) {
  if (n_prs < 0) throw ConfigInvalid("n_prs must be >= 0, got " + std::to_string(n_prs));
  if (len < 0) throw ConfigInvalid("property bytes (len) must be >= 0, got " + std::to_string(len));
  return ByteCount{h.upper + h.concat + n_prs * h.pr, response ? n_prs * len : 0};
}

ByteCount stream_bytes(const HeaderSizes& h, const int64_t* n_prs, const uint8_t* response, int64_t n_packets,
                       int64_t len) {
  ByteCount total;
  for (int64_t i = 0; i < n_packets; ++i) {
    const ByteCount b = packet_bytes(h, n_prs[i], response[i] != 0, len);
    total.header += b.header;
    total.payload += b.payload;
  }
  return total;
}

double sa_header_share(const HeaderSizes& h, int64_t k, int64_t elem_bytes) {
  if (k <= 0 || elem_bytes <= 0)
    throw ConfigInvalid("K and element bytes must be > 0 (K " + std::to_string(k) + ", elem_bytes " +
                        std::to_string(elem_bytes) + ")");
  const ByteCount read = packet_bytes(h, 1, false, k * elem_bytes);
  const ByteCount resp = packet_bytes(h, 1, true, k * elem_bytes);
  const double header = static_cast<double>(read.header + resp.header);
  return header / (header + static_cast<double>(read.payload + resp.payload));
}

}  // namespace netsparse::units
