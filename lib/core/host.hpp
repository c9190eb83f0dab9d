// Facts about the host machine that bound what a sandbox may be given.
#pragma once

#include <cstdint>
#include <string>

#include "platform.hpp"

namespace ss {

int HostCpus();             // online CPUs
int64_t HostMemory();       // bytes of RAM (MemTotal)
std::string HostMachine();  // uname's machine: "x86_64", "aarch64", "arm64" (macOS)

// Fewer than all ids mapped (platform::MappedIds): inside a container with a user namespace,
// where, among other things, device nodes cannot be made.
bool InUserNamespace();
using platform::MappedIds;

// How QEMU can run guests on this host, and why (platform.hpp).
using platform::Accel;
using platform::DetectAccel;

}  // namespace ss
