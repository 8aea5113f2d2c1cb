// Typed errors of the units (units/errors.h) -> hw_models._C.units.<Name>, each a subclass of
// ValueError and of its hw_models.errors class, so Python catches them by class (never by
// message): ConfigInvalid is a ConfigError, OutOfOrder a UnitStateError; the packet errors are
// PacketErrors whose `kind` is the switch service's error-counter key; InternalError (a broken invariant:
// a bug, not bad input) is hw_models.errors.InternalError, a RuntimeError.
#include <pybind11/pybind11.h>

#include "bind/bindings.h"
#include "units/errors.h"

namespace py = pybind11;
using namespace netsparse::units;

namespace {
// A packet error class under units.PacketError with its counter key (base translators go first:
// pybind11 tries the last registered first, and a C++ catch of the base also takes derived types).
template <class T>
void packet_kind(py::module_& units, const py::object& base, const char* name, const char* kind) {
  py::register_exception<T>(units, name, base).attr("kind") = kind;
}
}  // namespace

void bind_errors(py::module_& units) {
  const py::module_ errors = py::module_::import("hw_models.errors");
  py::register_exception<ConfigInvalid>(units, "ConfigInvalid",
                                        py::make_tuple(errors.attr("ConfigError"), py::handle(PyExc_ValueError)));
  py::register_exception<OutOfOrder>(units, "OutOfOrder",
                                     py::make_tuple(errors.attr("UnitStateError"), py::handle(PyExc_ValueError)));
  py::register_exception<InternalError>(units, "InternalError", errors.attr("InternalError"));
  const py::object packet = py::register_exception<PacketError>(units, "PacketError", errors.attr("PacketError"));
  packet.attr("kind") = "malformed";
  packet_kind<MalformedPacket>(units, packet, "MalformedPacket", "malformed");
  packet_kind<NPrsMismatch>(units, packet, "NPrsMismatch", "n_prs_mismatch");
  packet_kind<OversizePacket>(units, packet, "OversizePacket", "oversize");
  packet_kind<UnknownDestination>(units, packet, "UnknownDestination", "unknown_destination");
  packet_kind<BadSource>(units, packet, "BadSource", "bad_source");
  packet_kind<WrongPropertySize>(units, packet, "WrongPropertySize", "wrong_property_size");
  packet_kind<Misrouted>(units, packet, "Misrouted", "misrouted");
}
