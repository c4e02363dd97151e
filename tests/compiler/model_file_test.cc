// The .kiln model reader (compiler/graph/model_file.cc, load_model) on headers written
// by hand: every refusal is a CompileError naming the file and the field. No backend is
// linked, so a header that passes every check ends at the backend lookup.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "compiler/graph/executor.h"
#include "compiler/support/error.h"

namespace kiln::graph {
namespace {

// A model file of one int32[4] input and output in buffers 0 and 1 and one kernel;
// the first `from` in it replaced by `to`.
std::string header(const std::string& from = "", const std::string& to = "") {
  std::string h = R"({"version":1,"backend":"cpu","target":"llvm","buffers":[{"bytes":16},{"bytes":16}],)"
                  R"("inputs":[{"name":"x","dtype":[0,32,1],"shape":[4],"buffer":0}],)"
                  R"("outputs":[{"name":"y","dtype":[0,32,1],"shape":[4],"buffer":1}],)"
                  R"("kernels":[{"name":"k","args":[0,1]}],"code":[0,8]})";
  if (!from.empty()) {
    size_t at = h.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) h.replace(at, from.size(), to);
  }
  return h;
}

// load_model's message for a file of that header and an 8-byte payload.
std::string load_error(const std::string& h) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("kiln_model_file_test_" + std::to_string(getpid()) + ".kiln");
  {
    std::ofstream f(path, std::ios::binary);
    uint64_t n = h.size();
    f.write("KILNMDL1", 8);
    f.write(reinterpret_cast<const char*>(&n), 8);
    f << h << std::string(8, '\0');
  }
  std::string message = "loaded";
  try {
    load_model(path.string());
  } catch (const CompileError& e) {
    message = e.what();
    EXPECT_EQ(message.rfind(path.string() + ": ", 0), 0u) << message;
    message = message.substr(path.string().size() + 2);
  }
  std::filesystem::remove(path);
  return message;
}

TEST(ModelFile, AWellFormedHeaderReachesTheBackend) {
  EXPECT_NE(load_error(header()).find("'cpu'"), std::string::npos) << load_error(header());
}

// Found by tests/fuzz/model_file_fuzz: get<std::vector<int>>() of 1.8e19 is undefined
// behaviour. Every integer of the header is a JSON integer of its type's range.
TEST(ModelFile, IntegerFieldsRefuseFloatsAndOutOfRangeValues) {
  EXPECT_EQ(load_error(header(R"("dtype":[0,32,1],"shape":[4],"buffer":1)", R"("dtype":[1.8e19],"buffer":1)")),
            "corrupt model header: [json.exception.type_error.302] 'dtype[0]' must be an integer, got 1.8e+19");
  EXPECT_EQ(load_error(header(R"("shape":[4],"buffer":0)", R"("shape":[4.0],"buffer":0)")),
            "corrupt model header: [json.exception.type_error.302] 'shape[0]' must be an integer, got 4.0");
  EXPECT_EQ(load_error(header(R"("buffer":0)", R"("buffer":4294967296)")),
            "corrupt model header: [json.exception.out_of_range.406] 'buffer' is 4294967296, outside -2147483648 to "
            "2147483647");
  EXPECT_EQ(load_error(header(R"("args":[0,1])", R"("args":[0,true])")),
            "corrupt model header: [json.exception.type_error.302] 'args[1]' must be an integer, got true");
  EXPECT_EQ(load_error(header(R"("version":1)", R"("version":1e300)")),
            "corrupt model header: [json.exception.type_error.302] 'version' must be an integer, got 1e+300");
  auto init = [](const std::string& range) { return header(R"({"bytes":16},)", R"({"bytes":16,"init":)" + range + "},"); };
  EXPECT_EQ(load_error(init("[-1,8]")),
            "corrupt model header: [json.exception.out_of_range.406] 'init[0]' is -1, outside 0 to 18446744073709551615");
  EXPECT_EQ(load_error(init("[0]")), "'init' must be [offset, size]");
  EXPECT_EQ(load_error(init("[0,9]")), "truncated (data past the end)");
  EXPECT_NE(load_error(init("[0,8]")).find("'cpu'"), std::string::npos) << load_error(init("[0,8]"));
}

// What the executor copies into a buffer (a constant's data, an input) must fit it.
TEST(ModelFile, TensorsAndDataMustFitTheirBuffers) {
  EXPECT_EQ(load_error(header(R"({"bytes":16},{"bytes":16})", R"({"bytes":-16},{"bytes":16})")),
            "buffer 0: negative size -16");
  EXPECT_EQ(load_error(header(R"({"bytes":16},{"bytes":16})", R"({"bytes":4,"init":[0,8]},{"bytes":16})")),
            "buffer 0: 8 bytes of initial data for 4 bytes");
  EXPECT_EQ(load_error(header(R"("shape":[4],"buffer":0)", R"("shape":[5],"buffer":0)")),
            "tensor 'x' (int32[5]) does not fit its buffer 0 of 16 bytes");
  EXPECT_EQ(load_error(header(R"("shape":[4],"buffer":0)", R"("shape":[-4,-1],"buffer":0)")),
            "tensor 'x': negative dimension in int32[-4, -1]");
  EXPECT_EQ(load_error(header(R"("shape":[4],"buffer":0)", R"("shape":[4611686018427387904,4],"buffer":0)")),
            "tensor int32[4611686018427387904, 4] has too many elements");
  EXPECT_EQ(load_error(header(R"("shape":[4],"buffer":0)", R"("shape":[4611686018427387904],"buffer":0)")),
            "tensor 'x' (int32[4611686018427387904]) does not fit its buffer 0 of 16 bytes");
}

}  // namespace
}  // namespace kiln::graph
