// Facts about the host machine that bound what a sandbox may be given.
#pragma once

#include <cstdint>
#include <string>

#include "platform.hpp"

namespace ss {

int HostCpus();        // online CPUs
int64_t HostMemory();  // bytes of RAM (MemTotal)
std::string HostMachine();  // uname's machine: "x86_64", "aarch64", "arm64" (macOS)

// How many user ids this process's user namespace maps (one past the highest id inside):
// 4294967295 at the top level, fewer inside a container with a user namespace (where, among
// other things, device nodes cannot be made).
uint64_t MappedIds();
bool InUserNamespace();

// How QEMU can run guests on this host, and why (platform.hpp).
using platform::Accel;
using platform::DetectAccel;

}  // namespace ss
