// The one JSON file reader; see model/json_file.hpp.
#include "model/json_file.hpp"

#include <filesystem>
#include <fstream>

#include "model/error.hpp"

namespace chunkflow {

nlohmann::json read_json_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "", "cannot open " + what + ": it is a folder");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open " + what);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path, "", std::string("malformed JSON: ") + e.what());
  } catch (const nlohmann::json::exception& e) {  // e.g. out_of_range 406: a number beyond a double
    throw InputError(path, "", std::string("malformed JSON: ") + e.what());
  } catch (const std::exception& e) {  // a read error of the stream
    throw InputError(path, "", std::string("cannot read ") + what + ": " + e.what());
  }
}

std::string string_member_or(const nlohmann::json& object, const char* key, const std::string& fallback) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

}  // namespace chunkflow
