#pragma once
// See passes.h for what this pass does; lower() runs it.
#include "compiler/passes/passes.h"
