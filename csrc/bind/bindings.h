#pragma once
// Declarations of each unit's binding function (defined in csrc/bind/<unit>.cpp), called from
// csrc/bind/module.cpp (hw_models._C). One line per unit; add yours with a small insertion.
#include <pybind11/pybind11.h>

void bind_errors(pybind11::module_& units);     // typed unit errors -> hw_models._C.units (py::register_exception)
void bind_flit_link(pybind11::module_& units);  // NetCrafter link layer -> hw_models._C.units
void bind_protocol(pybind11::module_& units);        // NetSparse wire protocol (Fig. 6) -> hw_models._C.units
void bind_header_model(pybind11::module_& units);    // header model (Table 5 / Fig. 6) -> hw_models._C.units
void bind_concatenator(pybind11::module_& units);    // concatenator (§6.1.2) -> hw_models._C.units
void bind_property_cache(pybind11::module_& units);  // switch property cache (§6.2.2) -> hw_models._C.units
void bind_rig_unit(pybind11::module_& units);        // RIG client unit (§5.1-5.3) -> hw_models._C.units
void bind_switch_pipe(pybind11::module_& units);     // switch middle pipe (§6.2.1) -> hw_models._C.units
void bind_rig_node(pybind11::module_& units);        // one node's RIG pipeline -> hw_models._C.units
void bind_switch_service(pybind11::module_& units);  // switch service frame helpers -> hw_models._C.units
void bind_switch_fabric(pybind11::module_& units);   // switch fabric client helpers -> hw_models._C.units
void bind_sim(pybind11::module_& sim);               // discrete-event simulator core -> _C.sim
void bind_graph(pybind11::module_& graph);           // paper-scale analogs, streaming workload stats -> _C.graph
