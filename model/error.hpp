#pragma once
// Input errors. Library code throws InputError; only main() turns it into exit code 2.
#include <stdexcept>
#include <string>

namespace chunkflow {

/// An error in user input: names the file (may be empty for command-line input), the field
/// (a JSON pointer such as "/workload/frames" or an option such as "--frames") and what was
/// expected. what() is "file: field: message" with empty parts left out.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string field, const std::string& message);
  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  /// The message without the file and field prefixes.
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  std::string field_;
  std::string message_;
};

}  // namespace chunkflow
