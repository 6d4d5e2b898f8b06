// libchunkflow_mpi.so: MPI for `sweep --grid` under mpirun (sim/mpi_plugin.hpp), loaded by the
// program only then (sim/grid_mpi.cpp). Linked with OpenMPI's C library alone.
#include "sim/mpi_plugin.hpp"

#include <mpi.h>

namespace {

constexpr int kBlockTag = 12;  ///< tag of the grid's block messages

int init(int* rank, int* size) {
  int provided = 0;
  // Only the main thread calls MPI (MPI_THREAD_FUNNELED); MPI's default handler aborts on errors.
  if (const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided); rc != MPI_SUCCESS) return rc;
  if (const int rc = MPI_Comm_rank(MPI_COMM_WORLD, rank); rc != MPI_SUCCESS) return rc;
  return MPI_Comm_size(MPI_COMM_WORLD, size);
}

void finalize() { MPI_Finalize(); }

int64_t broadcast(int64_t v) {
  MPI_Bcast(&v, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  return v;
}

void send_to_root(const char* bytes, int size) {
  MPI_Send(bytes, size, MPI_CHAR, 0, kBlockTag, MPI_COMM_WORLD);
}

int probe(int from) {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(from, kBlockTag, MPI_COMM_WORLD, &flag, &status);
  if (!flag) return -1;
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  return count;
}

void receive(int from, char* out, int size) {
  MPI_Recv(out, size, MPI_CHAR, from, kBlockTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

void abort_world(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

constexpr ChunkflowMpiApi kApi{kChunkflowMpiApiVersion, init, finalize, broadcast, send_to_root, probe, receive,
                               abort_world};

}  // namespace

extern "C" __attribute__((visibility("default"))) const ChunkflowMpiApi* chunkflow_mpi_api() { return &kApi; }
