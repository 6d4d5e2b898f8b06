#pragma once
// The C interface between the chunkflow program and its MPI plugin, libchunkflow_mpi.so
// (sim/mpi_plugin.cpp, built beside the program when CMake finds OpenMPI). The program loads the
// plugin (dlopen) only for `sweep --grid` under mpirun (sim/grid_mpi.cpp), so that no other start
// pays for loading and relocating OpenMPI's libraries: 3.5 ms of a 13.5 ms start measured on the
// 2-core development machine (README "Speed"). Plain C types only: the program and the plugin may
// carry different C++ runtimes (the program links libstdc++ statically).
#include <cstddef>
#include <cstdint>

extern "C" {

/// Bumped whenever a member below changes: the program refuses a plugin of another version.
inline constexpr int kChunkflowMpiApiVersion = 1;

/// Every call is made by the program's main thread only (MPI_THREAD_FUNNELED). Sizes in bytes;
/// ranks of MPI_COMM_WORLD.
struct ChunkflowMpiApi {
  int version;  ///< kChunkflowMpiApiVersion of the plugin
  /// MPI_Init_thread(FUNNELED), then the world's rank and size. Returns 0, or MPI's error code.
  int (*init)(int* rank, int* size);
  /// MPI_Finalize.
  void (*finalize)();
  /// Rank 0's value of `v` on every rank (MPI_Bcast).
  int64_t (*broadcast)(int64_t v);
  /// Sends `size` bytes (at most INT32_MAX) to rank 0 (MPI_Send, tag of the grid's blocks).
  void (*send_to_root)(const char* bytes, int size);
  /// The size of the next block message from `from` when one has arrived (MPI_Iprobe), else -1.
  int (*probe)(int from);
  /// Receives that message (its size from probe) into `out` (MPI_Recv).
  void (*receive)(int from, char* out, int size);
  /// MPI_Abort(MPI_COMM_WORLD, code): ends every rank.
  void (*abort)(int code);
};

/// The plugin's one exported symbol (dlsym): its table of functions, valid while it is loaded.
const ChunkflowMpiApi* chunkflow_mpi_api();
}
