// The ranks a grid runs on (sim/grid_run.hpp GridComm): MPI_COMM_WORLD when the program was launched
// by mpirun, through the MPI plugin libchunkflow_mpi.so beside the program (sim/mpi_plugin.hpp,
// built when CMake finds Debian's OpenMPI), else one process. MPI is loaded and initialised only
// here, only for `sweep --grid` under mpirun: every other command, and a grid sweep started
// without mpirun, never maps OpenMPI's libraries.
#include <dlfcn.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>

#include "sim/grid_run.hpp"
#include "sim/mpi_plugin.hpp"

namespace chunkflow {

namespace {

/// The world size mpirun (OpenMPI) or a PMI launcher announced, or 0 when not launched by one.
int launcher_world_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return 0;
}

/// The plugin's path: libchunkflow_mpi.so in the running program's directory (CMakeLists.txt writes
/// both into one folder), or "" with `why` set when the program's own path cannot be read.
std::filesystem::path plugin_path(std::string& why) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    why = "cannot locate the program through /proc/self/exe: " + ec.message();
    return {};
  }
  return exe.parent_path() / "libchunkflow_mpi.so";
}

/// The plugin's functions, or nullptr with `why` set when it is missing or unusable. Loaded with
/// RTLD_GLOBAL: OpenMPI's own components, which it dlopens in turn, resolve symbols of libmpi.
const ChunkflowMpiApi* load_plugin(const std::filesystem::path& path, std::string& why) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char* e = dlerror();
    why = e ? e : "dlopen failed";
    return nullptr;
  }
  using Entry = const ChunkflowMpiApi* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, "chunkflow_mpi_api"));
  const ChunkflowMpiApi* api = entry ? entry() : nullptr;
  if (!api || api->version != kChunkflowMpiApiVersion) {
    why = !api ? "no chunkflow_mpi_api symbol"
               : "interface version " + std::to_string(api->version) + ", expected " +
                     std::to_string(kChunkflowMpiApiVersion) + " (rebuild the program and the plugin together)";
    dlclose(handle);  // MPI was not initialised: nothing of it is in use
    return nullptr;
  }
  return api;  // the plugin stays loaded to exit (MPI's atexit handlers live in it)
}

class MpiComm final : public GridComm {
 public:
  explicit MpiComm(const ChunkflowMpiApi& api) : api_(api) {
    if (const int rc = api_.init(&rank_, &size_); rc != 0)
      throw std::runtime_error("MPI_Init_thread failed with MPI error " + std::to_string(rc));
  }
  ~MpiComm() override { api_.finalize(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int64_t broadcast(int64_t v) override { return api_.broadcast(v); }
  void send_to_root(const std::string& bytes) override {
    if (bytes.size() > std::size_t(INT_MAX)) throw std::runtime_error("grid: a block message exceeds 2 GiB");
    api_.send_to_root(bytes.data(), int(bytes.size()));
  }
  bool receive_from(int from, std::string& out, const std::function<bool()>& stop) override {
    // Probe, so that a signal can end the wait (a blocking receive could not be interrupted).
    for (int idle = 0;; ++idle) {
      if (const int count = api_.probe(from); count >= 0) {
        out.resize(std::size_t(count));
        api_.receive(from, out.data(), count);
        return true;
      }
      if (stop()) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(idle < 100 ? 20 : 500));
    }
  }
  [[noreturn]] void abort(int code) override {
    api_.abort(code);
    std::exit(code);
  }

 private:
  const ChunkflowMpiApi& api_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<GridComm> make_grid_comm() {
  const int world = launcher_world_size();
  if (world == 0) return std::make_unique<GridComm>();
  std::string why;
  const std::filesystem::path path = plugin_path(why);
  if (!path.empty())
    if (const ChunkflowMpiApi* api = load_plugin(path, why)) return std::make_unique<MpiComm>(*api);
  if (world > 1)
    throw std::runtime_error("launched by mpirun with " + std::to_string(world) + " ranks, but the MPI plugin " +
                             (path.empty() ? std::string("libchunkflow_mpi.so") : path.string()) + " cannot be loaded (" + why +
                             "): build with OpenMPI (libopenmpi-dev: scripts/setup.sh, and reconfigure) and keep the "
                             "plugin beside the program; every rank would write the same files");
  return std::make_unique<GridComm>();  // one rank: the same output without MPI
}

}  // namespace chunkflow
