#include <c10/util/Exception.h>

#include <array>
#include <cstdio>
#include <sstream>
#include <utility>

#include "gpu/gpu_check.hpp"

namespace kernelhub::gpu_check {
namespace {

const char* status_text(Status status) {
  switch (status) {
    case Status::pass:
      return "pass";
    case Status::fail:
      return "**FAIL**";
    case Status::not_applicable:
      return "n/a";
    case Status::info:
      return "";
  }
  return "";
}

// Markdown cells: a '|' or a newline in an error message would break the table.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void Report::add(std::string section, std::string subject, Status status, std::string detail) {
  rows_.push_back({std::move(section), std::move(subject), status, std::move(detail)});
  const Row& row = rows_.back();
  // Progress on stderr as it goes: a run cut short still says how far it got.
  std::fprintf(stderr, "[%s] %s: %s %s\n", row.section.c_str(), row.subject.c_str(),
               status_text(row.status), row.detail.c_str());
}

bool Report::failed() const {
  for (const auto& row : rows_) {
    if (row.status == Status::fail) return true;
  }
  return false;
}

std::string Report::markdown() const {
  std::ostringstream out;
  out << "| section | check | result | detail |\n| --- | --- | --- | --- |\n";
  int passed = 0;
  int failed = 0;
  int not_applicable = 0;
  for (const auto& row : rows_) {
    out << "| " << cell(row.section) << " | " << cell(row.subject) << " | "
        << status_text(row.status) << " | " << cell(row.detail) << " |\n";
    passed += row.status == Status::pass ? 1 : 0;
    failed += row.status == Status::fail ? 1 : 0;
    not_applicable += row.status == Status::not_applicable ? 1 : 0;
  }
  out << "\n"
      << passed << " passed, " << failed << " failed, " << not_applicable
      << " not applicable on this device.\n";
  return out.str();
}

std::string error_text(const std::exception& error) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error)) {
    return c10_error->what_without_backtrace();
  }
  return error.what();
}

std::string format_number(double value, int digits) {
  std::array<char, 64> buffer{};
  std::snprintf(buffer.data(), buffer.size(), "%.*g", digits, value);
  return buffer.data();
}

std::string format_ms(double ms) {
  std::array<char, 64> buffer{};
  std::snprintf(buffer.data(), buffer.size(), "%.3f ms", ms);
  return buffer.data();
}

}  // namespace kernelhub::gpu_check
