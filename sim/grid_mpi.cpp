// The ranks a grid runs on (sim/grid_run.hpp GridComm): MPI_COMM_WORLD when the program was launched
// by mpirun and built with MPI (CHUNKFLOW_HAVE_MPI, CMake finds Debian's OpenMPI), else one process.
// MPI is initialised only here, only for `sweep --grid` under mpirun: every other command, and a
// grid sweep started without mpirun, never touches it.
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "sim/grid_run.hpp"

#ifdef CHUNKFLOW_HAVE_MPI
#include <mpi.h>
#endif

namespace chunkflow {

namespace {

/// The world size mpirun (OpenMPI) or a PMI launcher announced, or 0 when not launched by one.
int launcher_world_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return 0;
}

#ifdef CHUNKFLOW_HAVE_MPI
constexpr int kBlockTag = 12;

class MpiComm final : public GridComm {
 public:
  MpiComm() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);  // only the main thread calls MPI
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiComm() override { MPI_Finalize(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int64_t broadcast(int64_t v) override {
    MPI_Bcast(&v, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    return v;
  }
  void send_to_root(const std::string& bytes) override {
    if (bytes.size() > std::size_t(INT32_MAX)) throw std::runtime_error("grid: a block message exceeds 2 GiB");
    MPI_Send(bytes.data(), int(bytes.size()), MPI_CHAR, 0, kBlockTag, MPI_COMM_WORLD);
  }
  bool receive_from(int from, std::string& out, const std::function<bool()>& stop) override {
    // Probe, so that a signal can end the wait (a blocking receive could not be interrupted).
    for (int idle = 0;; ++idle) {
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(from, kBlockTag, MPI_COMM_WORLD, &flag, &status);
      if (flag) {
        int count = 0;
        MPI_Get_count(&status, MPI_CHAR, &count);
        out.resize(std::size_t(count));
        MPI_Recv(out.data(), count, MPI_CHAR, from, kBlockTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return true;
      }
      if (stop()) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(idle < 100 ? 20 : 500));
    }
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
  }

 private:
  int rank_ = 0, size_ = 1;
};
#endif

}  // namespace

std::unique_ptr<GridComm> make_grid_comm() {
  const int world = launcher_world_size();
  if (world == 0) return std::make_unique<GridComm>();
#ifdef CHUNKFLOW_HAVE_MPI
  return std::make_unique<MpiComm>();
#else
  if (world > 1)
    throw std::runtime_error("launched by mpirun with " + std::to_string(world) +
                             " ranks, but this chunkflow was built without MPI (install libopenmpi-dev: scripts/setup.sh, "
                             "and reconfigure); every rank would write the same files");
  return std::make_unique<GridComm>();
#endif
}

}  // namespace chunkflow
