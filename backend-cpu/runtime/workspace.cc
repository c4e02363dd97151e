#include "backend-cpu/runtime/workspace.h"

#include <cstdlib>
#include <mutex>
#include <vector>

namespace {

constexpr int64_t kAlign = 64;
// What the cache keeps at most: freed buffers past it are given back to malloc.
constexpr int64_t kCacheBytes = int64_t{1} << 30;

struct Block {
  void* p;        // its header
  int64_t bytes;  // its capacity, after the header
};

struct Cache {
  std::mutex mu;
  std::vector<Block> blocks;  // least recently freed first
  int64_t bytes = 0;
  ~Cache() {
    for (const Block& b : blocks) std::free(b.p);
  }
};

Cache& cache() {
  static Cache c;
  return c;
}

int64_t capacity(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

// Each buffer is a 64-byte header holding its capacity, then the caller's bytes.
extern "C" void* kiln_workspace_alloc(int64_t bytes) {
  if (bytes < 0) return nullptr;
  int64_t want = capacity(bytes > 0 ? bytes : 1);
  void* base = nullptr;
  {
    // The smallest cached buffer that holds it, if it is at most twice its size (a
    // larger one would sit unused; malloc hands out a fitting one).
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    size_t best = c.blocks.size();
    for (size_t i = 0; i < c.blocks.size(); ++i) {
      int64_t have = c.blocks[i].bytes;
      if (have >= want && have <= 2 * want && (best == c.blocks.size() || have < c.blocks[best].bytes)) best = i;
    }
    if (best < c.blocks.size()) {
      base = c.blocks[best].p;
      c.bytes -= c.blocks[best].bytes;
      c.blocks.erase(c.blocks.begin() + static_cast<std::ptrdiff_t>(best));
    }
  }
  if (!base) {
    base = std::aligned_alloc(kAlign, static_cast<size_t>(want + kAlign));
    if (!base) return nullptr;
    *static_cast<int64_t*>(base) = want;
  }
  return static_cast<char*>(base) + kAlign;
}

extern "C" void kiln_workspace_free(void* p) {
  if (!p) return;
  void* base = static_cast<char*>(p) - kAlign;
  Block b{base, *static_cast<int64_t*>(base)};
  std::vector<void*> evicted;
  {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    if (b.bytes > kCacheBytes) {
      evicted.push_back(base);
    } else {
      c.blocks.push_back(b);
      c.bytes += b.bytes;
      size_t drop = 0;
      while (c.bytes > kCacheBytes) {
        evicted.push_back(c.blocks[drop].p);
        c.bytes -= c.blocks[drop].bytes;
        ++drop;
      }
      c.blocks.erase(c.blocks.begin(), c.blocks.begin() + static_cast<std::ptrdiff_t>(drop));
    }
  }
  for (void* e : evicted) std::free(e);
}

extern "C" void kiln_workspace_release(void) {
  std::vector<Block> blocks;
  {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    blocks.swap(c.blocks);
    c.bytes = 0;
  }
  for (const Block& b : blocks) std::free(b.p);
}
