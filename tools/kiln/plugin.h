#pragma once
// Targets from outside Kiln's tree: `kiln --plugin PATH <command> ...` loads a shared
// object that registers its strategies, backends and operators with the registries of
// compiler/graph and compiler/target, as a backend in the tree does from main(). The
// object exports `extern "C" void kiln_register_plugin()` and leaves Kiln's own symbols
// undefined: the kiln executable exports them (ENABLE_EXPORTS), so the object reaches
// the executable's registries, not copies of its own.
#include <string>

namespace kiln::cli {

inline constexpr const char* kPluginEntry = "kiln_register_plugin";

// dlopen()s `path` and calls its entry point; an error naming the file and what failed
// (missing, not a shared object, an undefined symbol, no entry point).
void load_plugin(const std::string& path);

}  // namespace kiln::cli
