#include "support/flags.h"

#include <cstdlib>
#include <fstream>
#include <iostream>

namespace strider {

bool log_enabled(const char* category) {
  const char* v = std::getenv("STRIDER_LOG");
  if (!v) return false;
  std::string list = std::string(",") + v + ",";
  return list.find(std::string(",") + category + ",") != std::string::npos || list == ",all,";
}

void log_line(const char* category, const std::string& line) {
  // one write: stages compile on several threads (compile_stages), their lines must not interleave
  if (log_enabled(category)) std::cerr << ("[strider:" + std::string(category) + "] " + line + "\n");
}

bool dumps_enabled() {
  const char* dir = std::getenv("STRIDER_DUMP_DIR");
  return dir && *dir;
}

void debug_dump_text(const std::string& name, const std::string& text) {
  if (dumps_enabled()) std::ofstream(std::string(std::getenv("STRIDER_DUMP_DIR")) + "/" + name) << text;
}

}  // namespace strider
