#include "host.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "fs.hpp"
#include "strings.hpp"

namespace ss {

std::string HostMachine() {
  struct utsname u {};
  return ::uname(&u) == 0 ? u.machine : "unknown";
}

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

Accel DetectAccel(const std::string& root) {
#ifdef __APPLE__
  (void)root;
  return {"hvf", "HVF (Hypervisor.framework)"};
#else
  const std::string tcg = "TCG, software emulation (about 10x slower): ";
  if (!PathExists(root + "/dev/kvm")) {
    return {"tcg",
            tcg + "no /dev/kvm (no hardware virtualization, or the kvm module is not loaded)"};
  }
  if (IsDirectory(root + "/sys/module/kvm_pvm")) {
    return {"tcg", tcg +
                       "/dev/kvm is kvm_pvm, which runs only guest kernels built for PVM, and "
                       "the CPU exposes no VMX/SVM"};
  }
  std::string cpuinfo = ReadFileIfExists(root + "/proc/cpuinfo").value_or("");
  bool vmx = false;
  for (const auto& line : SplitLines(cpuinfo)) {
    if (line.rfind("flags", 0) != 0) continue;
    for (const auto& flag : Split(line.substr(line.find(':') + 1), ' ')) {
      vmx = vmx || flag == "vmx" || flag == "svm";
    }
  }
  if (!vmx) return {"tcg", tcg + "the CPU exposes no VMX/SVM"};
  if (::access((root + "/dev/kvm").c_str(), R_OK | W_OK) != 0) {
    return {"tcg", tcg + "no access to /dev/kvm (join the kvm group)"};
  }
  return {"kvm", "KVM (hardware virtualization)"};
#endif
}

}  // namespace ss
