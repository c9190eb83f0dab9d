// `auto`: QEMU with hardware acceleration > LXD > Docker > Podman > QEMU without it.
#include <gtest/gtest.h>

#include <map>

#include "backend.hpp"
#include "backend_factory.hpp"
#include "error.hpp"

namespace ss {
namespace {

Probe Usable(std::string reason, bool degraded = false) {
  Probe p;
  p.usable = true;
  p.degraded = degraded;
  p.reason = std::move(reason);
  return p;
}

Probe Unusable(std::string reason) {
  Probe p;
  p.reason = std::move(reason);
  p.fix = "fix it";
  return p;
}

BackendChoice Choose(std::map<std::string, Probe> probes) {
  return ChooseBackend(AutoBackendNames(),
                       [&](const std::string& name) { return probes.at(name); });
}

TEST(BackendChoice, OrderIsQemuLxdDockerPodman) {
  EXPECT_EQ(AutoBackendNames(), (std::vector<std::string>{"qemu", "lxd", "docker", "podman"}));
  // Lima is known, but never chosen by auto here: ss cannot fence its network.
  EXPECT_EQ(BackendNames(), (std::vector<std::string>{"qemu", "lxd", "docker", "podman", "lima"}));
}

TEST(BackendChoice, HardwareAcceleratedQemuComesFirst) {
  BackendChoice c = Choose({{"qemu", Usable("KVM")},
                            {"lxd", Usable("LXD 5.0")},
                            {"docker", Usable("Docker")},
                            {"podman", Usable("Podman")}});
  EXPECT_EQ(c.name, "qemu");
  EXPECT_EQ(c.reason, "qemu: KVM");
}

TEST(BackendChoice, TcgQemuIsPassedOverForContainers) {
  BackendChoice c = Choose({{"qemu", Usable("TCG: no VMX/SVM", true)},
                            {"lxd", Unusable("the LXD daemon is not running")},
                            {"docker", Usable("Docker 20.10")},
                            {"podman", Usable("Podman")}});
  EXPECT_EQ(c.name, "docker");
  EXPECT_EQ(c.reason,
            "docker: Docker 20.10 (passed over: qemu: TCG: no VMX/SVM; lxd: the LXD daemon is not "
            "running)");
}

TEST(BackendChoice, LxdBeforeDockerBeforePodman) {
  EXPECT_EQ(Choose({{"qemu", Unusable("no qemu")},
                    {"lxd", Usable("LXD")},
                    {"docker", Usable("Docker")},
                    {"podman", Usable("Podman")}})
                .name,
            "lxd");
  EXPECT_EQ(Choose({{"qemu", Unusable("no qemu")},
                    {"lxd", Unusable("no lxd")},
                    {"docker", Unusable("no docker")},
                    {"podman", Usable("Podman")}})
                .name,
            "podman");
}

TEST(BackendChoice, TcgQemuWhenNothingElseRuns) {
  BackendChoice c = Choose({{"qemu", Usable("TCG", true)},
                            {"lxd", Unusable("no lxd")},
                            {"docker", Unusable("no docker")},
                            {"podman", Unusable("no podman")}});
  EXPECT_EQ(c.name, "qemu");
  EXPECT_NE(c.reason.find("the only backend that runs here"), std::string::npos) << c.reason;
}

TEST(BackendChoice, NothingRunsListsWhyAndHow) {
  try {
    Choose({{"qemu", Unusable("no qemu")},
            {"lxd", Unusable("no lxd")},
            {"docker", Unusable("no docker")},
            {"podman", Unusable("no podman")}});
    FAIL() << "chose something";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), 69);
    ASSERT_EQ(e.details().size(), 4u);
    EXPECT_EQ(e.details()[1], "  lxd: no lxd (fix it)");
  }
}

}  // namespace
}  // namespace ss
