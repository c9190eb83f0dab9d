// Facts about the host machine that bound what a sandbox may be given.
#pragma once

#include <cstdint>

namespace ss {

int HostCpus();        // online CPUs
int64_t HostMemory();  // bytes of RAM (MemTotal)

}  // namespace ss
