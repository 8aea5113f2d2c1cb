// hw_models._C: the hardware units, the simulator core and the graph analogs. Plain pybind11, no torch:
// torch-free tools (netsparse-simulate, hw_models) load it without torch's shared libraries.
#include "bind/bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "NetSparse hardware units, the discrete-event simulator core and the paper-scale graph analogs";
  auto units = m.def_submodule("units", "Hardware units (one C++ implementation each) and their typed errors");
  bind_errors(units);
  bind_flit_link(units);
  bind_protocol(units);
  bind_header_model(units);
  bind_concatenator(units);
  bind_property_cache(units);
  bind_rig_unit(units);
  bind_switch_pipe(units);
  bind_rig_node(units);
  bind_switch_service(units);
  bind_switch_fabric(units);
  auto sim = m.def_submodule("sim", "The discrete-event simulator core: SimConfig, simulate and its column names");
  bind_sim(sim);
  auto graph = m.def_submodule("graph", "Paper-scale analog generators and streaming workload statistics");
  bind_graph(graph);
}
