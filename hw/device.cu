// Device discovery, provenance and the checked-call error path (see executor.hpp, cuda_util.cuh).
#include <fstream>
#include <string>

#include "hw/cuda_util.cuh"

namespace chunkflow::hw {

namespace {
thread_local int current_device = -1;
}

void use_device(int device) {
  current_device = device;
  CF_CUDA(cudaSetDevice(device));
}

void throw_device_error(const char* file, int line, const char* call, const std::string& error) {
  int device = current_device;
  if (device < 0 && cudaGetDevice(&device) != cudaSuccess) device = -1;
  throw DeviceError(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " + error + " on device " +
                    (device >= 0 ? std::to_string(device) : std::string("?")));
}

void check_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw_device_error(file, line, call, std::string(cublasGetStatusName(s)) + " (" + cublasGetStatusString(s) + ")");
}

void check_nccl(ncclResult_t r, const char* call, const char* file, int line) {
  if (r != ncclSuccess) throw_device_error(file, line, call, std::string("NCCL error ") + std::to_string(int(r)) + " (" + ncclGetErrorString(r) + ")");
}

int require_devices(int needed) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky-free error so later calls report their own
    throw NoDeviceError(std::string("no CUDA device: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  }
  if (count == 0) throw NoDeviceError("no CUDA device: cudaGetDeviceCount found 0 devices");
  if (count < needed)
    throw NoDeviceError("no CUDA device for every rank: the plan needs " + std::to_string(needed) +
                        " CUDA devices, found " + std::to_string(count) +
                        " (use a one-GPU node, whose collectives run through the pcie-proxy backend)");
  return count;
}

std::map<std::string, std::string> device_context(int devices) {
  const int count = require_devices(1);
  std::map<std::string, std::string> c;
  c["device_count"] = std::to_string(count);
  for (int d = 0; d < std::min(devices, count); ++d) {
    cudaDeviceProp prop{};
    CF_CUDA(cudaGetDeviceProperties(&prop, d));
    char bus[32] = {0};
    CF_CUDA(cudaDeviceGetPCIBusId(bus, sizeof bus, d));
    const std::string prefix = d == 0 ? "" : "gpu" + std::to_string(d) + ".";
    c[prefix + "gpu_name"] = prop.name;
    c[prefix + "pci_bus_id"] = bus;
    c[prefix + "gpu_memory_bytes"] = std::to_string(prop.totalGlobalMem);
    c[prefix + "sm_count"] = std::to_string(prop.multiProcessorCount);
    c[prefix + "compute_capability"] = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  }
  int v = 0;
  CF_CUDA(cudaDriverGetVersion(&v));
  c["cuda_driver_api"] = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  CF_CUDA(cudaRuntimeGetVersion(&v));
  c["cuda_runtime"] = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  int major = 0, minor = 0, patch = 0;
  CF_CUBLAS(cublasGetProperty(MAJOR_VERSION, &major));
  CF_CUBLAS(cublasGetProperty(MINOR_VERSION, &minor));
  CF_CUBLAS(cublasGetProperty(PATCH_LEVEL, &patch));
  c["cublas"] = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  CF_NCCL(ncclGetVersion(&v));
  c["nccl"] = std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." + std::to_string(v % 100);
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  c["driver"] = f && std::getline(f, line) ? line : "unknown (/proc/driver/nvidia/version not readable)";
  return c;
}

}  // namespace chunkflow::hw
