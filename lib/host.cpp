#include "host.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace ss {

int HostCpus() {
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

int64_t HostMemory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemTotal:") return kb * 1024;
  }
  return static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
}

uint64_t MappedIds() {
  std::ifstream in("/proc/self/uid_map");
  uint64_t inside = 0, outside = 0, count = 0, top = 0;
  while (in >> inside >> outside >> count) top = std::max(top, inside + count);
  return top == 0 ? 4294967295u : top;
}

bool InUserNamespace() { return MappedIds() < 4294967295u; }

}  // namespace ss
