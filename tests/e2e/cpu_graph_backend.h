#pragma once
// Registers the CPU backend (backend-cpu) as "cpu" in the graph's backend registry.
// This adapter belongs in backend-cpu/ (a backend registers itself); it lives here
// until that folder's owner takes it over.
namespace kiln::test {
void register_cpu_graph_backend();
}
