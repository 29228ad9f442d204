#include "runtime/kernel_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "support/flags.h"

namespace strider {

// --- SHA-256 (FIPS 180-4)

namespace {

constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
    0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
    0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
    0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compress(uint32_t h[8], const uint8_t* block) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = uint32_t(block[4 * i]) << 24 | uint32_t(block[4 * i + 1]) << 16 | uint32_t(block[4 * i + 2]) << 8 | block[4 * i + 3];
  for (int i = 16; i < 64; ++i) {
    const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (int i = 0; i < 64; ++i) {
    const uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[i] + w[i];
    const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

std::string hex(const uint8_t* p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) (out += digits[p[i] >> 4]) += digits[p[i] & 15];
  return out;
}

}  // namespace

std::array<uint8_t, 32> sha256(std::string_view data) {
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t n = data.size();
  for (; n >= 64; n -= 64, p += 64) compress(h, p);
  uint8_t tail[128] = {};
  std::memcpy(tail, p, n);
  tail[n] = 0x80;
  const size_t len = n < 56 ? 64 : 128;
  const uint64_t bits = uint64_t(data.size()) * 8;
  for (int i = 0; i < 8; ++i) tail[len - 1 - i] = static_cast<uint8_t>(bits >> (8 * i));
  compress(h, tail);
  if (len == 128) compress(h, tail + 64);
  std::array<uint8_t, 32> out;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(h[i] >> (24 - 8 * j));
  return out;
}

std::string sha256_hex(std::string_view data) {
  const std::array<uint8_t, 32> d = sha256(data);
  return hex(d.data(), d.size());
}

// --- keys

void CacheKey::add(const std::string& name, const std::string& value) {
  parts_.emplace_back(name, value);
  text_ += name + " " + std::to_string(value.size()) + "\n" + value + "\n";
}

std::string CacheKey::digest() const { return sha256_hex(text_); }

std::string CacheKey::summary() const {
  std::string out;
  for (const auto& [name, value] : parts_) {
    out += (out.empty() ? "" : " ") + name + "=";
    const size_t line = std::min(value.find('\n'), value.size());
    if (line == value.size() && line <= 64) {
      out += value;
    } else {  // the start of its first line, its size and digest
      out += "\"" + value.substr(0, std::min<size_t>(line, 40)) + "...\"(" + std::to_string(value.size()) +
             "B,sha256:" + sha256_hex(value).substr(0, 16) + ")";
    }
  }
  return out;
}

// --- entries

namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'I', 'D', 'E', 'R', 'K'};

void put_u64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
void put_bytes(std::string& out, const std::string& s) {
  put_u64(out, s.size());
  out += s;
}

// Reads the fields of an entry in order; any read past the end fails.
struct Reader {
  std::string_view in;
  size_t at = 0;

  bool u64(uint64_t& v) {
    if (in.size() - at < 8) return false;
    std::memcpy(&v, in.data() + at, 8);
    at += 8;
    return true;
  }
  bool bytes(std::string& s) {
    uint64_t n;
    if (!u64(n) || in.size() - at < n) return false;
    s.assign(in.data() + at, n);
    at += n;
    return true;
  }
};

}  // namespace

std::string encode_entry(const CacheKey& key, const KernelBlob& blob) {
  std::string out(kMagic, sizeof kMagic);
  const uint32_t format = DiskCache::kFormat;
  out.append(reinterpret_cast<const char*>(&format), 4);
  put_bytes(out, key.text());
  put_u64(out, blob.entries.size());
  for (const KernelBlob::Entry& e : blob.entries) {
    put_bytes(out, e.symbol);
    put_u64(out, e.scratch_bytes);
    put_bytes(out, e.refused);
  }
  put_bytes(out, blob.object);
  put_bytes(out, blob.ir);
  const std::array<uint8_t, 32> sum = sha256(out);
  out.append(reinterpret_cast<const char*>(sum.data()), sum.size());
  return out;
}

std::optional<KernelBlob> decode_entry(std::string_view bytes, const CacheKey& key, std::string* why) {
  auto fail = [&](const char* reason) {
    if (why) *why = reason;
    return std::nullopt;
  };
  if (bytes.size() < sizeof kMagic + 4 + 32) return fail("truncated");
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) return fail("not a strider cache entry");
  uint32_t format;
  std::memcpy(&format, bytes.data() + sizeof kMagic, 4);
  if (format != DiskCache::kFormat) return fail("written by another entry format");
  const std::string_view body = bytes.substr(0, bytes.size() - 32);
  if (std::memcmp(sha256(body).data(), bytes.data() + body.size(), 32) != 0) return fail("checksum mismatch");
  Reader r{body, sizeof kMagic + 4};
  std::string text;
  KernelBlob blob;
  uint64_t entries = 0;
  if (!r.bytes(text) || !r.u64(entries) || entries > body.size()) return fail("malformed");
  blob.entries.resize(entries);
  for (KernelBlob::Entry& e : blob.entries)
    if (!r.bytes(e.symbol) || !r.u64(e.scratch_bytes) || !r.bytes(e.refused)) return fail("malformed");
  if (!r.bytes(blob.object) || !r.bytes(blob.ir) || r.at != body.size()) return fail("malformed");
  if (text != key.text()) return fail("written for another key");
  return blob;
}

// --- the directory

namespace {

// mkdir -p, new directories private to the user.
bool make_dirs(const std::string& dir, std::string* why) {
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return true;
    *why = "it is not a directory";
    return false;
  }
  const size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(dir.substr(0, slash), why)) return false;
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *why = std::strerror(errno);
    return false;
  }
  return true;
}

std::string default_dir() {
  if (const char* d = std::getenv("STRIDER_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/strider";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/strider";
  return "";
}

}  // namespace

DiskCache* DiskCache::process() {
  static DiskCache* cache = []() -> DiskCache* {
    const char* off = std::getenv("STRIDER_CACHE");
    if (off && std::string(off) == "0") return nullptr;
    return new DiskCache(default_dir());
  }();
  return cache;
}

DiskCache::DiskCache(std::string dir) : dir_(std::move(dir)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  std::string why;
  if (dir_.empty()) disable("no HOME, XDG_CACHE_HOME or STRIDER_CACHE_DIR to put it in");
  else if (!make_dirs(dir_, &why)) disable("cannot create it: " + why);
  else if (access(dir_.c_str(), W_OK | X_OK) != 0) disable("it is not writable");
}

bool DiskCache::enabled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return enabled_;
}

void DiskCache::disable(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!enabled_) return;
    enabled_ = false;
  }
  std::cerr << "strider: warning: kernel cache directory '" << dir_ << "' unusable (" << why
            << "); compiled kernels are kept in memory only (set STRIDER_CACHE_DIR, or STRIDER_CACHE=0)\n";
}

std::string DiskCache::path(const CacheKey& key) const { return dir_ + "/" + key.digest() + ".kernel"; }

std::optional<KernelBlob> DiskCache::load(const CacheKey& key) const {
  if (!enabled()) return std::nullopt;
  const std::string file = path(key);
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    log_line("cache", "miss " + file);
    return std::nullopt;
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::string why;
  std::optional<KernelBlob> blob = decode_entry(bytes.str(), key, &why);
  log_line("cache", blob ? "disk hit " + file : "damaged entry " + file + " (" + why + "): recompiling");
  return blob;
}

void DiskCache::store(const CacheKey& key, const KernelBlob& blob) {
  if (!enabled()) return;
  static std::atomic<uint64_t> counter{0};
  const std::string file = path(key);
  const std::string tmp = file + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  const std::string bytes = encode_entry(key, blob);
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return disable(std::string("cannot write in it: ") + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const int err = done == bytes.size() ? 0 : errno;
  if (close(fd) != 0 || err != 0 || rename(tmp.c_str(), file.c_str()) != 0) {
    const std::string reason = std::strerror(err ? err : errno);
    unlink(tmp.c_str());
    return disable("writing an entry failed: " + reason);
  }
  log_line("cache", "wrote " + file + " (" + std::to_string(bytes.size()) + " bytes)");
}

}  // namespace strider
