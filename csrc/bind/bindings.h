#pragma once
// Declarations of each unit's binding function (defined in csrc/bind/<unit>.cpp), called from
// csrc/module.cpp. One line per unit; add yours with a small insertion.
#include <pybind11/pybind11.h>

void bind_flit_link(pybind11::module_& units);  // NetCrafter link layer -> _C.units
