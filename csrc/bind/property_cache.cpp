// Python binding of the switch property cache (paper §6.2.2) -> hw_models._C.units.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "bind/bindings.h"
#include "units/errors.h"
#include "units/property_cache.h"

namespace py = pybind11;
using namespace netsparse::units;

namespace {
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using U8 = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;
}  // namespace

void bind_property_cache(py::module_& units) {
  units.attr("UNBOUNDED_CACHE") = kUnboundedCache;
  py::class_<PropertyCache>(units, "PropertyCache", "Set-associative LRU property cache (paper §6.2.2)")
      .def(py::init([](int64_t size_bytes, int64_t ways, int64_t segment_bytes, int64_t max_line_bytes,
                       int64_t prop_bytes, bool keep_data) {
             CacheConfig cfg{size_bytes, ways, segment_bytes, max_line_bytes};
             cfg.no_data = !keep_data;
             PropertyCache c(cfg);
             c.invalidate(prop_bytes);
             return c;
           }),
           "size_bytes=UNBOUNDED_CACHE (-1): unbounded (never evicts; memory follows what is inserted). keep_data=False: "
           "no bytes kept, a hit's lookup returns prop_bytes zeros",
           py::kw_only(), py::arg("size_bytes"), py::arg("ways"), py::arg("segment_bytes"),
           py::arg("max_line_bytes"), py::arg("prop_bytes"), py::arg("keep_data") = true)
      .def("invalidate", &PropertyCache::invalidate, "Invalidate every line; set the next kernel's property size",
           py::arg("prop_bytes"))
      .def("lookup",
           [](PropertyCache& c, int64_t idx) -> py::object {
             if (idx < 0) throw ConfigInvalid("idx must be >= 0");
             std::string buf(static_cast<size_t>(c.prop_bytes()), '\0');
             if (!c.lookup(static_cast<uint64_t>(idx), reinterpret_cast<uint8_t*>(buf.data()))) return py::none();
             return py::bytes(buf);
           },
           "The cached property bytes, or None on a miss", py::arg("idx"))
      .def("insert",
           [](PropertyCache& c, int64_t idx, const py::bytes& data) {
             const std::string_view s(data);
             if (idx < 0) throw ConfigInvalid("idx must be >= 0");
             if (static_cast<int64_t>(s.size()) != c.prop_bytes())
               throw ConfigInvalid("property data has " + std::to_string(s.size()) + " B, expected " +
                                   std::to_string(c.prop_bytes()));
             return c.insert(static_cast<uint64_t>(idx), reinterpret_cast<const uint8_t*>(s.data()));
           },
           "Insert if absent; True when inserted", py::arg("idx"), py::arg("data"))
      .def("lookup_many",
           [](PropertyCache& c, const I64& idx) {
             py::array_t<bool> hit(idx.size());
             auto* h = hit.mutable_data();
             const int64_t* p = idx.data();
             const int64_t n = idx.size();
             for (int64_t i = 0; i < n; ++i)
               if (p[i] < 0) throw ConfigInvalid("idx must be >= 0");
             py::gil_scoped_release release;
             for (int64_t i = 0; i < n; ++i) h[i] = c.lookup(static_cast<uint64_t>(p[i]), nullptr);
             return hit;
           },
           "Hit flags of a stream of lookups (no data copied)", py::arg("idx"))
      .def("lookup_or_insert_many",
           [](PropertyCache& c, const I64& idx, const U8& props) {
             // The switch pattern on one stream: a miss is fetched (props[idx]) and inserted.
             const int64_t n = idx.size(), pb = c.prop_bytes();
             if (props.ndim() != 2 || props.shape(1) != pb)
               throw ConfigInvalid("props must be (n_rows, prop_bytes) uint8");
             const int64_t rows = props.shape(0);
             const int64_t* p = idx.data();
             for (int64_t i = 0; i < n; ++i)
               if (p[i] < 0 || p[i] >= rows) throw ConfigInvalid("idx " + std::to_string(p[i]) + " out of range");
             py::array_t<bool> hit(n);
             auto* h = hit.mutable_data();
             const uint8_t* d = props.data();
             py::gil_scoped_release release;
             for (int64_t i = 0; i < n; ++i) {
               h[i] = c.lookup(static_cast<uint64_t>(p[i]), nullptr);
               if (!h[i]) c.insert(static_cast<uint64_t>(p[i]), d + p[i] * pb);
             }
             return hit;
           },
           py::arg("idx"), py::arg("props"))
      .def("contains", [](const PropertyCache& c, int64_t idx) { return c.contains(static_cast<uint64_t>(idx)); })
      .def_property_readonly("prop_bytes", &PropertyCache::prop_bytes)
      .def_property_readonly("line_bytes", &PropertyCache::line_bytes)
      .def_property_readonly("n_chunks", &PropertyCache::n_chunks)
      .def_property_readonly("n_sets", &PropertyCache::n_sets)
      .def_property_readonly("unbounded", &PropertyCache::unbounded)
      .def_property_readonly("held", &PropertyCache::held, "Properties present in an unbounded cache")
      .def_property_readonly("bytes", &PropertyCache::bytes, "Memory held for lines, tags and data")
      .def_property_readonly("counters", [](const PropertyCache& c) {
        py::dict d;
        d["hits"] = c.hits;
        d["misses"] = c.misses;
        d["inserts"] = c.inserts;
        d["evictions"] = c.evictions;
        return d;
      });
}
