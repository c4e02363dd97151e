#pragma once
// A search's result for people and programs: the front as a table, as JSON, as an SVG
// plot (cycles against each resource's share of the part, the budget drawn, the board's
// own configuration marked), and each front point as a configuration file.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "explore/search.h"

namespace kiln::explore {

std::string front_table(const ExploreResult& r, const ExploreContext& ctx);
nlohmann::json result_json(const ExploreResult& r, const ExploreContext& ctx, const ExploreOptions& opt);
std::string front_svg(const ExploreResult& r, const ExploreContext& ctx, const ExploreOptions& opt);
// Writes hw/config-style JSON for each front point into `dir` (created): a file that
// `kiln synth --config`, `kiln sim` and the compiler read, whose description carries the
// measured figures. Returns the paths.
std::vector<std::filesystem::path> write_front_configs(const ExploreResult& r, const std::filesystem::path& dir);

}  // namespace kiln::explore
