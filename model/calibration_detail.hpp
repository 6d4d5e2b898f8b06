#pragma once
// Helpers shared by the calibration sources (model/calibration.cpp, model/calibration_io.cpp).
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace chunkflow {

/// A number as text with 10 significant digits (error messages).
std::string number_text(double v);

/// A JSON object's members as strings (non-strings dumped); {} for null. Throws InputError(path,
/// pointer) when `j` is neither null nor an object.
std::map<std::string, std::string> context_map(const nlohmann::json& j, const std::string& path,
                                               const std::string& pointer);

}  // namespace chunkflow
