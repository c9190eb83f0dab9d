#include "host.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <string>

namespace ss {

std::string HostMachine() {
  struct utsname u {};
  return ::uname(&u) == 0 ? u.machine : "unknown";
}

int HostCpus() {
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

int64_t HostMemory() { return platform::MemoryBytes(); }

bool InUserNamespace() { return MappedIds() < 4294967295u; }

}  // namespace ss
