#pragma once

#include <string>

namespace strider {

struct Graph;

/// The debug switches (README's table): STRIDER_LOG=passes,... writes lines to stderr;
/// STRIDER_DUMP_DIR=dir writes each pass's IR to dir/<graph>.<pass>.ir.
bool log_enabled(const char* category);
void log_line(const char* category, const std::string& line);
void debug_dump(const char* pass, const Graph& g);
/// Writes `text` to STRIDER_DUMP_DIR/name when dumps are on (the .ll of each stage).
void debug_dump_text(const std::string& name, const std::string& text);

}  // namespace strider
