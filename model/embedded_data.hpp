#pragma once
// Data files compiled into the binary (CMake generates the definition from model/catalogue/*.json
// and model/nodes/*.json; cmake/embed_data.cmake), so built-in nodes need no files at run time.
#include <string_view>
#include <vector>

namespace chunkflow {

struct EmbeddedFile {
  std::string_view path;      ///< relative to the repository root, e.g. "model/nodes/2xh100-pcie.json"
  std::string_view contents;  ///< the file's bytes
};

/// Every embedded file, sorted by path.
const std::vector<EmbeddedFile>& embedded_data_files();

}  // namespace chunkflow
