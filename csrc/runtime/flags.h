#pragma once

#include <string>

namespace strider {

struct Graph;

/// The debug switches (README's table): STRIDER_LOG=passes,... writes lines to stderr;
/// STRIDER_DUMP_DIR=dir writes each pass's IR to dir/<graph>.<pass>.ir.
bool log_enabled(const char* category);
void log_line(const char* category, const std::string& line);
void debug_dump(const char* pass, const Graph& g);

}  // namespace strider
