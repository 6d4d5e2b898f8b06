#include "model/error.hpp"

#include <utility>

namespace chunkflow {

namespace {

// "file: field: message" with empty parts (and their separators) left out.
std::string compose_message(const std::string& file, const std::string& field, const std::string& message) {
  std::string out;
  for (const std::string* part : {&file, &field}) {
    if (!part->empty()) {
      out += *part;
      out += ": ";
    }
  }
  out += message;
  return out;
}

}  // namespace

InputError::InputError(std::string file, std::string field, const std::string& message)
    : std::runtime_error(compose_message(file, field, message)),
      file_(std::move(file)),
      field_(std::move(field)),
      message_(message) {}

}  // namespace chunkflow
