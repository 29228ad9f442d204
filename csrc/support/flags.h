#pragma once

#include <string>

namespace strider {

/// The debug switches (README's table): STRIDER_LOG=passes,... writes lines to stderr;
/// STRIDER_DUMP_DIR=dir receives the IR after each pipeline step (driver/lower.cc), each
/// stage's .ll and .cu.
bool log_enabled(const char* category);
void log_line(const char* category, const std::string& line);
/// Whether STRIDER_DUMP_DIR names a directory to dump into.
bool dumps_enabled();
/// Writes `text` to STRIDER_DUMP_DIR/name when dumps are on.
void debug_dump_text(const std::string& name, const std::string& text);

}  // namespace strider
