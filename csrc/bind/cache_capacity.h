#pragma once
// A property cache's capacity argument in the bindings: None = unbounded, as a delay of None is infinite.
// The unit's own encoding (-1) is refused here, so a switch service's ConfigureRequest cannot ask for an
// unbounded cache by a negative size.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "units/errors.h"
#include "units/property_cache.h"

inline int64_t capacity_bytes_of(const pybind11::object& capacity_bytes) {
  if (capacity_bytes.is_none()) return netsparse::units::kUnboundedCache;
  const int64_t bytes = capacity_bytes.cast<int64_t>();
  if (bytes <= 0)
    throw netsparse::units::ConfigInvalid("property cache capacity_bytes must be > 0 or None (unbounded), got " +
                                          std::to_string(bytes));
  return bytes;
}
