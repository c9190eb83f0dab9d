// Facts about the host machine that bound what a sandbox may be given.
#pragma once

#include <cstdint>
#include <string>

namespace ss {

int HostCpus();        // online CPUs
int64_t HostMemory();  // bytes of RAM (MemTotal)
std::string HostMachine();  // uname's machine: "x86_64", "aarch64", "arm64" (macOS)

// How many user ids this process's user namespace maps (one past the highest id inside):
// 4294967295 at the top level, fewer inside a container with a user namespace (where, among
// other things, device nodes cannot be made).
uint64_t MappedIds();
bool InUserNamespace();

// How QEMU can run guests on this host, and why.
struct Accel {
  std::string kind;    // "kvm", "hvf" or "tcg"
  std::string reason;  // "KVM (hardware virtualization)", "TCG: the CPU exposes no VMX/SVM"
  bool hardware() const { return kind != "tcg"; }
};

// KVM only when hardware virtualization actually works: /dev/kvm usable, the CPU exposing VMX or
// SVM, and not a PVM-only /dev/kvm (kvm_pvm runs only guests built for PVM, which a stock kernel
// is not). `root` prefixes /proc, /sys and /dev (tests point it at a fake tree).
Accel DetectAccel(const std::string& root = "");

}  // namespace ss
