// The MXU as a plugin of the kiln command line: `kiln --plugin libkiln_mxu_plugin.so run
// MODEL.q.onnx --target mxu` (tools/kiln/plugin.h).
#include "examples/matrix-unit/mxu_target.h"

extern "C" void kiln_register_plugin() { kiln::mxu::register_mxu_target(); }
