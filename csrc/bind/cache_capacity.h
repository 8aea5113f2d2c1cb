#pragma once
// A property cache's capacity argument in the bindings: None = unbounded, as a delay of None is infinite.
#include <pybind11/pybind11.h>

#include <cstdint>

#include "units/property_cache.h"

inline int64_t capacity_bytes_of(const pybind11::object& capacity_bytes) {
  return capacity_bytes.is_none() ? netsparse::units::kUnboundedCache : capacity_bytes.cast<int64_t>();
}
