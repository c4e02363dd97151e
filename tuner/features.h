#pragma once
// Features of a candidate for the cost model: a fixed-length vector made from its
// lowered loop IR and its knobs (docs/tuning.md, "Features", lists every entry).
//
//  - whole function (10): log2(1+x) of floating-point ops, loads, stores (each
//    weighted by its trip count), of the loop count, parallel loops, unrolled loops,
//    local allocation bytes (times the trips around them), the widest vector, and the
//    bytes of the largest single allocation in local scope (the register tile) and in
//    any other scope (a packed copy);
//  - the loop nest of the heaviest store (the one with the most arithmetic times trip
//    count), its innermost kMaxLoops loops, outermost first (padded with zeros in
//    front), per loop (kLoopFeatures): log2 extent, serial/parallel/unrolled
//    one-hot, log2 of the product of the extents inside it (inclusive), and for each
//    of kMaxBuffers buffers accessed by that store (the stored one first, then the
//    loads in order of first appearance): log2(1+|stride|) of the access along the
//    loop and a reuse flag (stride 0);
//  - per buffer of that store (3 each): vector lanes of the access, log2 of the
//    elements touched by the innermost nest, log2 of the reuse (trip count over
//    touched elements);
//  - the heaviest store's arithmetic per execution (5): adds, muls, loads, casts,
//    selects (vector ops count their lanes);
//  - knobs: one entry per knob (split: log2 of each factor but the outermost;
//    other kinds: the choice's position).
#include <string>
#include <vector>

#include "compiler/schedule/lower.h"
#include "tuner/space.h"

namespace kiln::tuner {

constexpr int kMaxLoops = 8;
constexpr int kMaxBuffers = 3;
constexpr int kLoopFeatures = 5 + 2 * kMaxBuffers;

// The IR part of the features (same length for every function).
std::vector<float> loop_features(const schedule::LoweredFunc& f);
// The knob part (same length for every configuration of one space).
std::vector<float> knob_features(const ConfigSpace& space, const Config& c);
// Both, IR first; several functions' IR features are summed.
std::vector<float> candidate_features(const std::vector<schedule::LoweredFunc>& funcs, const ConfigSpace& space, const Config& c);
// Floating-point operations of one call of the functions (adds, subtracts, multiplies
// and divides times their trip counts; a multiply-add is 2): what the flops of a
// template defined outside the op library (Workload::arg_flops) are counted as.
double float_ops(const std::vector<schedule::LoweredFunc>& funcs);
// Names of the IR features, in order (for docs and debugging).
std::vector<std::string> loop_feature_names();

}  // namespace kiln::tuner
