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

}  // namespace chunkflow
