// chunkflow-hw without a CUDA device: exit code 3, "no CUDA device" on stderr, no output file.
// The devices are hidden with CUDA_VISIBLE_DEVICES=-1 so that this runs on GPU machines too.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

struct Result {
  int exit_code = -1;
  std::string stderr_text;
};

Result run_hw(const std::string& args, const fs::path& dir) {
  const fs::path err = dir / "stderr.txt";
  const std::string cmd = "cd '" + dir.string() + "' && CUDA_VISIBLE_DEVICES=-1 '" + std::string(CHUNKFLOW_HW_BINARY) +
                          "' " + args + " > /dev/null 2> '" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err);
  std::stringstream s;
  s << in.rdbuf();
  r.stderr_text = s.str();
  return r;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("chunkflow_hw_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST_CASE("run without a device exits 3 with 'no CUDA device' and writes no output file", "[hw][no-device]") {
  const fs::path d = fresh_dir("run");
  const Result r = run_hw("run --model wan2.1-t2v-1.3b --node 1xh100-sxm --ulysses 1 --height 128 --width 128 "
                          "--frames 5 --trace trace.json --output summary.json",
                          d);
  INFO(r.stderr_text);
  CHECK(r.exit_code == 3);
  CHECK(r.stderr_text.find("no CUDA device") != std::string::npos);
  CHECK(!fs::exists(d / "trace.json"));
  CHECK(!fs::exists(d / "summary.json"));
  for (const auto& e : fs::directory_iterator(d)) CHECK(e.path().filename() == "stderr.txt");  // no temp files
  fs::remove_all(d);
}

TEST_CASE("check and bench without a device exit 3 and write nothing", "[hw][no-device]") {
  const fs::path d = fresh_dir("check");
  Result r = run_hw("check --model wan2.1-t2v-1.3b --node 1xh100-sxm --height 128 --width 128 --frames 5 --output c.json", d);
  CHECK(r.exit_code == 3);
  CHECK(r.stderr_text.find("no CUDA device") != std::string::npos);
  r = run_hw("bench --model wan2.1-t2v-1.3b --output b.json", d);
  CHECK(r.exit_code == 3);
  CHECK(r.stderr_text.find("no CUDA device") != std::string::npos);
  CHECK(!fs::exists(d / "c.json"));
  CHECK(!fs::exists(d / "b.json"));
  fs::remove_all(d);
}

TEST_CASE("input errors come before the device check: exit 2 naming the option", "[hw][no-device]") {
  const fs::path d = fresh_dir("input");
  Result r = run_hw("run --frames 80 --trace t.json", d);
  CHECK(r.exit_code == 2);
  CHECK(r.stderr_text.find("--frames") != std::string::npos);
  r = run_hw("run --collective foo", d);
  CHECK(r.exit_code == 2);
  CHECK(r.stderr_text.find("--collective") != std::string::npos);
  r = run_hw("run --no-such-option", d);
  CHECK(r.exit_code == 2);
  r = run_hw("run --launch bogus", d);
  CHECK(r.exit_code == 2);
  CHECK(r.stderr_text.find("--launch") != std::string::npos);
  CHECK(r.stderr_text.find("expected graph, direct or stream") != std::string::npos);
  CHECK(!fs::exists(d / "t.json"));
  fs::remove_all(d);
}

TEST_CASE("every launch mode is accepted: without a device each run reaches the device check", "[hw][no-device]") {
  const fs::path d = fresh_dir("launch");
  for (const char* mode : {"graph", "direct", "stream"}) {
    const Result r = run_hw(std::string("run --model wan2.1-t2v-1.3b --node 1xh100-sxm --ulysses 1 --height 128 --width 128 "
                                        "--frames 5 --launch ") + mode + " --output s.json",
                            d);
    INFO(mode << ": " << r.stderr_text);
    CHECK(r.exit_code == 3);
    CHECK(r.stderr_text.find("no CUDA device") != std::string::npos);
  }
  CHECK(!fs::exists(d / "s.json"));
  fs::remove_all(d);
}

TEST_CASE("bench --list needs no device", "[hw][no-device]") {
  const fs::path d = fresh_dir("list");
  const Result r = run_hw("bench --list", d);
  CHECK(r.exit_code == 0);
  fs::remove_all(d);
}
