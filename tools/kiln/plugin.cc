#include "tools/kiln/plugin.h"

#include <dlfcn.h>

#include "support/error.h"

namespace kiln::cli {

void load_plugin(const std::string& path) {
  // RTLD_NOW: a symbol the executable lacks is an error here, not a crash later.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) throw Error("--plugin " + path + ": " + dlerror());
  auto* entry = reinterpret_cast<void (*)()>(dlsym(handle, kPluginEntry));
  if (!entry) throw Error("--plugin " + path + ": no function " + kPluginEntry + " in it");
  entry();
}

}  // namespace kiln::cli
