// libFuzzer harness: published-measurement records (model/published.hpp read_published_record,
// the files of traces/published/ that `chunkflow validate --published DIR` reads), then the
// record's prediction (model/published_predict.hpp predict_published). A record must be named
// after its id, so the input is written to <id>.json when its "id" is a plain name (as a user's
// file would be), else to a fixed name (the reader must then refuse it at /id).
#include <nlohmann/json.hpp>

#include <cctype>
#include <filesystem>
#include <fstream>

#include "fuzz/fuzz_util.hpp"
#include "model/error.hpp"
#include "model/published.hpp"
#include "model/published_predict.hpp"

namespace {

/// The "id" of the input when it is a JSON object whose id is a short name of [A-Za-z0-9._-]
/// (no path separator, not "." or ".."); "record" otherwise.
std::string file_stem(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (!j.is_object() || !j.contains("id") || !j["id"].is_string()) return "record";
  const std::string id = j["id"].get<std::string>();
  if (id.empty() || id.size() > 64 || id == "." || id == "..") return "record";
  for (const char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return "record";
  return id;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkflow;
  namespace fs = std::filesystem;
  // A per-process folder beside fuzz::write_input's file, emptied for each input.
  static const fs::path dir = fs::path(fuzz::write_input(nullptr, 0)).replace_extension("published");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path path = dir / (file_stem(data, size) + ".json");
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  fuzz::expect_only<InputError>([&] {
    const PublishedRecord r = read_published_record(path.string());
    (void)predict_published(r);
  });
  fuzz::expect_only<InputError>([&] { (void)load_published_records(dir.string()); });
  return 0;
}
