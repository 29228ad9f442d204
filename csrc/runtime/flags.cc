#include "runtime/flags.h"

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "ir/graph.h"

namespace strider {

bool log_enabled(const char* category) {
  const char* v = std::getenv("STRIDER_LOG");
  if (!v) return false;
  std::string list = std::string(",") + v + ",";
  return list.find(std::string(",") + category + ",") != std::string::npos || list == ",all,";
}

void log_line(const char* category, const std::string& line) {
  if (log_enabled(category)) std::cerr << "[strider:" << category << "] " << line << "\n";
}

void debug_dump_text(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("STRIDER_DUMP_DIR");
  if (!dir || !*dir) return;
  std::ofstream(std::string(dir) + "/" + name) << text;
}

void debug_dump(const char* pass, const Graph& g) {
  if (!std::getenv("STRIDER_DUMP_DIR")) return;
  debug_dump_text(g.name + "." + pass + ".ir", print_graph(g));
}

}  // namespace strider
