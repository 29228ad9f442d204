#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The disk half of the kernel cache: compiled stages as files, so that a new process running the
// same function with the same signature loads machine code instead of compiling it. (The memory
// half is the trace cache of each compiled function, csrc/python/dispatcher.h.)
//
// Switches (the README's table):
//   STRIDER_CACHE_DIR=dir  where entries live; default $XDG_CACHE_HOME/strider, else
//                          ~/.cache/strider (created with mode 0700)
//   STRIDER_CACHE=0        no disk cache: every new process compiles its stages
//   STRIDER_LOG=cache      one line per key (its named parts), hit, miss, damaged entry, write
namespace strider {

/// A cache key built from named parts, in the order added (strider and LLVM versions, the codegen
/// sources, the target, the stage's full text). Two keys are the same key when their texts are.
class CacheKey {
 public:
  void add(const std::string& name, const std::string& value);
  /// Each part as "name <bytes>\n" + value + "\n": what entries store and loads compare.
  const std::string& text() const { return text_; }
  /// SHA-256 of text() in hex (64 digits): the entry's file name.
  std::string digest() const;
  /// One line for STRIDER_LOG=cache: name=value per part, a long or multi-line value as the
  /// start of its first line, its size and digest.
  std::string summary() const;
  const std::vector<std::pair<std::string, std::string>>& parts() const { return parts_; }

 private:
  std::vector<std::pair<std::string, std::string>> parts_;
  std::string text_;
};

/// What compiled stages need to run in another process: one object file for a group of stages
/// compiled together (codegen/llvm/codegen.h; for CUDA a cubin, codegen/cuda/cuda_codegen.h), and
/// each stage's entry in it.
struct KernelBlob {
  struct Entry {
    std::string symbol;          // the entry function the object defines; "" when refused
    uint64_t scratch_bytes = 0;  // scratch memory the entry expects
    std::string refused;         // why the backend refused the stage (it runs on the reference)

    bool operator==(const Entry& o) const {
      return symbol == o.symbol && scratch_bytes == o.scratch_bytes && refused == o.refused;
    }
  };
  std::vector<Entry> entries;  // one per stage, in the group's order
  std::string object;          // a relocatable object file for the host (CUDA: the cubin); "" when every stage is refused
  std::string ir;              // the optimized module as .ll text (CUDA: the source NVRTC compiled)

  bool operator==(const KernelBlob& o) const { return entries == o.entries && object == o.object && ir == o.ir; }
};

/// A directory of entries, one file per key, named by the key's digest. An entry is the magic
/// "STRIDERK", the format version, the full key text, the blob, and a SHA-256 over all of it.
/// Writes go to a temporary file in the same directory, renamed over the entry (atomic: readers
/// see the old entry or the new one, and processes writing one key at once each leave a valid
/// entry). Loads check magic, version, key text and checksum; anything wrong is reported as a
/// miss (and logged), so the caller compiles and stores over it: a damaged entry is never run.
/// A directory that cannot be created or written turns the cache off with one warning on
/// stderr; the process then keeps its kernels in memory only. Thread-safe.
class DiskCache {
 public:
  static constexpr uint32_t kFormat = 2;

  /// The process's cache (see the switches above), created on first use; null when STRIDER_CACHE=0.
  static DiskCache* process();
  /// A cache in `dir` (created when missing).
  explicit DiskCache(std::string dir);

  /// False when the directory could not be created or written.
  bool enabled() const;
  const std::string& dir() const { return dir_; }
  std::string path(const CacheKey& key) const;
  /// The blob stored under `key`; nullopt when there is none or it is damaged.
  std::optional<KernelBlob> load(const CacheKey& key) const;
  /// Stores the blob under `key`, replacing any entry there.
  void store(const CacheKey& key, const KernelBlob& blob);

 private:
  void disable(const std::string& why);

  std::string dir_;
  mutable std::mutex mu_;
  bool enabled_ = true;
};

/// SHA-256 of `data`.
std::array<uint8_t, 32> sha256(std::string_view data);
std::string sha256_hex(std::string_view data);

/// The bytes of an entry and back (kernel_cache.cc; tests build damaged entries with these).
std::string encode_entry(const CacheKey& key, const KernelBlob& blob);
/// Nullopt, with the reason in `why`, unless `bytes` is a whole, intact entry for `key`.
std::optional<KernelBlob> decode_entry(std::string_view bytes, const CacheKey& key, std::string* why);

}  // namespace strider
