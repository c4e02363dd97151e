#pragma once
// Data types by name: the inverse of DataType::to_string() ("float32", "int8",
// "uint8x16", "bool", "bfloat16", "handle"), for the graph's cast attribute and the
// Python API.
#include <string>

#include "compiler/ir/type.h"

namespace kiln::ir {

// Throws CompileError naming the text when it is not a data type.
DataType parse_type(const std::string& text);

}  // namespace kiln::ir
