#pragma once
// The one hierarchy of typed errors of csrc/ (the units, the simulator, the graph generators and the
// local kernels), so Python catches them by class, never by message. The bindings (csrc/bind/errors.cpp
// for hw_models._C, csrc/module.cpp for netsparse_torch._C) register each with py::register_exception
// as a subclass of the hw_models.errors class it belongs to: ConfigInvalid -> ConfigError (and
// ValueError); OutOfOrder -> UnitStateError (and ValueError); the packet errors -> PacketError, whose
// `kind` is the switch service's error-counter key; InternalError -> InternalError (a RuntimeError).
// Every throw in csrc/ uses one of these; no plain standard exception is thrown outside this file.
#include <stdexcept>
#include <string>

namespace netsparse::units {

// A parameter out of range or inconsistent (the message names it and the allowed values).
struct ConfigInvalid : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A unit called out of order: a kernel not begun, PRs still pending, time going backwards.
struct OutOfOrder : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A broken invariant of the C++ code itself (a bug, not bad input); the message names the invariant.
struct InternalError : std::logic_error {
  using std::logic_error::logic_error;
};

// A packet or frame that breaks the wire protocol (paper Fig. 6), by what is wrong with it.
struct PacketError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
struct MalformedPacket : PacketError {  // truncated header, unknown type, PRs of the wrong size
  using PacketError::PacketError;
};
struct NPrsMismatch : PacketError {  // whole PRs, but not as many as the header announces
  using PacketError::PacketError;
};
struct OversizePacket : PacketError {  // larger than the MTU allows
  using PacketError::PacketError;
};
struct UnknownDestination : PacketError {  // a destination node the fabric does not have
  using PacketError::PacketError;
};
struct BadSource : PacketError {  // a PR source the fabric does not have, or a forged one
  using PacketError::PacketError;
};
struct WrongPropertySize : PacketError {  // a len field other than the kernel's property size
  using PacketError::PacketError;
};
struct Misrouted : PacketError {  // a packet or PR delivered to a node, unit or call it is not for
  using PacketError::PacketError;
};

}  // namespace netsparse::units
