#pragma once
// Reading a JSON input file, with every failure an InputError naming the file: a path that is not
// a readable regular file, a read error, malformed JSON, and numbers JSON can write but a double
// cannot hold (1e400). One reader for every parser of user files (scenarios, calibrations,
// microbenchmarks, measured runs), so that none of them turns hostile input into exit 1.
#include <nlohmann/json.hpp>
#include <string>

namespace chunkflow {

/// Parses the file at `path`. `what` names the kind of file in the "cannot open" message
/// ("the scenario file"). Throws InputError(path, "", ...) on any failure.
nlohmann::json read_json_file(const std::string& path, const std::string& what = "the file");

/// The string at `object[key]`, or `fallback` when `object` is not an object, lacks `key`, or holds
/// something other than a string there. For informational members that a reader may ignore
/// (a calibration's fit names, a partial output's context line); nlohmann's `value()` throws
/// type_error 302/306 on such input instead, which no parser of user files may let escape.
std::string string_member_or(const nlohmann::json& object, const char* key, const std::string& fallback = "");

}  // namespace chunkflow
