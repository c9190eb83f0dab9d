// The Docker/Podman backend's pure parts: the create command line and the engines' times.
#include "backend_docker.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "strings.hpp"

namespace ss {
namespace {

bool Has(const std::vector<std::string>& argv, const std::string& a, const std::string& b) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == a && argv[i + 1] == b) return true;
  }
  return false;
}

SandboxSpec Spec() {
  SandboxSpec s;
  s.name = "box";
  s.image_id = "bookworm-abc";
  s.resources.cpus = 2;
  s.resources.memory = 4LL << 30;
  s.host_uid = s.host_gid = 1000;  // the sandbox user's own ids: plain bind mounts
  s.mounts.push_back({"projects", "/home/u/projects", "/home/sandbox/projects", false});
  s.mounts.push_back({"src", "/a,b", "/home/sandbox/src", false});
  s.mounts.push_back({"data", "/d", "/data", true});
  return s;
}

TEST(ContainerArgs, DockerSandbox) {
  auto a = ContainerCreateArgs("docker", Spec(), "ss-sandbox:bookworm-abc", {20000, 32768}, true);
  EXPECT_EQ(a[0], "create");
  EXPECT_TRUE(Has(a, "--name", "box"));
  EXPECT_TRUE(Has(a, "--label", "ss.sandbox=true"));
  EXPECT_TRUE(Has(a, "--cap-add", "ALL"));
  EXPECT_TRUE(Has(a, "--cap-drop", "SYS_RESOURCE"));
  EXPECT_TRUE(Has(a, "--cap-drop", "SYS_MODULE"));
  // The host's files: their immutable flags, and every file of a shared folder's disk by handle.
  EXPECT_TRUE(Has(a, "--cap-drop", "LINUX_IMMUTABLE"));
  EXPECT_TRUE(Has(a, "--cap-drop", "DAC_READ_SEARCH"));
  EXPECT_TRUE(Has(a, "--security-opt", "apparmor=unconfined"));
  EXPECT_TRUE(Has(a, "--security-opt", "systempaths=unconfined"));
  EXPECT_TRUE(Has(a, "--cgroupns", "private"));
  EXPECT_TRUE(Has(a, "--tmpfs", "/sys/fs/cgroup:rw,nosuid,nodev,noexec,mode=755"));
  EXPECT_TRUE(Has(a, "--stop-signal", "SIGRTMIN+3"));
  EXPECT_TRUE(Has(a, "--device", "/dev/fuse"));
  EXPECT_TRUE(Has(a, "--env", "container=docker"));
  EXPECT_TRUE(Has(a, "--mount", "type=bind,source=/home/u/projects,target=/home/sandbox/projects"));
  EXPECT_TRUE(Has(a, "--mount", "type=bind,\"source=/a,b\",target=/home/sandbox/src"));
  // A read-only folder is a volume of its own (a read-only overlay), never a bind root inside
  // could remount read-write.
  EXPECT_TRUE(Has(a, "--mount", "type=volume,source=ss-box-data,target=/data,readonly"));
  EXPECT_EQ(std::count_if(a.begin(), a.end(),
                          [](const std::string& x) { return x.find("source=/d,") != x.npos; }),
            0);
  // No read-only bind at all: root inside could remount one read-write.
  EXPECT_EQ(std::count_if(a.begin(), a.end(),
                          [](const std::string& x) { return x.find(",readonly") != x.npos; }),
            1);
  EXPECT_TRUE(Has(a, "--mount", "type=volume,source=ss-box-docker,target=/var/lib/docker"));
  EXPECT_TRUE(Has(a, "--publish", "127.0.0.1::22"));
  EXPECT_TRUE(Has(a, "--cpus", "2"));
  EXPECT_TRUE(Has(a, "--memory", std::to_string(4LL << 30)));
  EXPECT_TRUE(Has(a, "--memory-swap", std::to_string(4LL << 30)));
  EXPECT_EQ(a[a.size() - 2], "ss-sandbox:bookworm-abc");
  EXPECT_EQ(a.back(), "/sbin/init");
  // Never --privileged, never the host's cgroup tree.
  EXPECT_EQ(std::find(a.begin(), a.end(), "--privileged"), a.end());
  for (const auto& arg : a) EXPECT_EQ(arg.find("/sys/fs/cgroup:/sys/fs/cgroup"), std::string::npos);
  // Podman-only flags stay out.
  EXPECT_EQ(std::find(a.begin(), a.end(), "--systemd=false"), a.end());
}

TEST(ContainerArgs, PodmanSandbox) {
  auto a = ContainerCreateArgs("podman", Spec(), "localhost/ss-sandbox:bookworm-abc",
                               {20000, 32768}, false);
  EXPECT_NE(std::find(a.begin(), a.end(), "--systemd=false"), a.end());
  EXPECT_TRUE(Has(a, "--security-opt", "unmask=ALL"));
  EXPECT_TRUE(Has(a, "--device-cgroup-rule", "c 5:1 rwm"));
  EXPECT_TRUE(Has(a, "--device-cgroup-rule", "c 10:200 rwm"));
  EXPECT_TRUE(Has(a, "--ulimit", "nofile=20000:20000"));
  EXPECT_TRUE(Has(a, "--ulimit", "nproc=32768:32768"));
  EXPECT_TRUE(Has(a, "--env", "container=podman"));
  EXPECT_FALSE(Has(a, "--security-opt", "apparmor=unconfined"));
  EXPECT_FALSE(Has(a, "--device", "/dev/fuse"));
}

TEST(ContainerArgs, FoldersOfAnotherOwnerGoThroughViews) {
  SandboxSpec s = Spec();
  s.host_uid = s.host_gid = 0;  // root's folders
  ASSERT_TRUE(ContainerNeedsViews(s));
  auto a = ContainerCreateArgs("docker", s, "img", {1, 1}, false);
  std::string views = ContainerViewsDir("docker", "box");
  EXPECT_EQ(views.rfind("/run/ss-views/", 0), 0u);
  EXPECT_NE(views, ContainerViewsDir("podman", "box"));
  EXPECT_TRUE(Has(a, "--mount",
                  Cat("type=bind,source=", views, "/projects,target=/home/sandbox/projects")));
  EXPECT_TRUE(Has(a, "--mount", Cat("type=bind,source=", views, "/src,target=/home/sandbox/src")));
  EXPECT_TRUE(Has(a, "--mount", "type=volume,source=ss-box-data,target=/data,readonly"));
  // The label keeps the folders themselves and their owner, for the views of later starts.
  auto label = std::find_if(a.begin(), a.end(),
                            [](const std::string& x) { return x.rfind("ss.spec=", 0) == 0; });
  ASSERT_NE(label, a.end());
  Json spec = Json::parse(label->substr(8));
  EXPECT_EQ(spec["owner"], Json::array({0, 0}));
  EXPECT_EQ(spec["mounts"][0]["source"], "/home/u/projects");
  EXPECT_FALSE(ContainerNeedsViews(Spec()));
}

TEST(ContainerArgs, ProcessesAndOpenFilesAreBoundedOnBothEngines) {
  SandboxSpec s = Spec();
  s.resources.processes = 4096;
  s.resources.open_files = 65536;
  for (const char* engine : {"docker", "podman"}) {
    auto a = ContainerCreateArgs(engine, s, "img", {1048576, 32768}, false);
    EXPECT_TRUE(Has(a, "--pids-limit", "4096")) << engine;
    EXPECT_TRUE(Has(a, "--ulimit", "nofile=65536:65536")) << engine;
    EXPECT_EQ(std::count(a.begin(), a.end(), "--pids-limit"), 1) << engine;
  }
  // Never more open files than this process may grant.
  auto a = ContainerCreateArgs("docker", s, "img", {20000, 32768}, false);
  EXPECT_TRUE(Has(a, "--ulimit", "nofile=20000:20000"));
  EXPECT_FALSE(Has(a, "--ulimit", "nofile=65536:65536"));
}

TEST(ContainerArgs, NoLimitsWhenNoneAreSet) {
  SandboxSpec s = Spec();
  s.resources = {};
  auto a = ContainerCreateArgs("docker", s, "img", {1, 1}, false);
  EXPECT_EQ(std::find(a.begin(), a.end(), "--cpus"), a.end());
  EXPECT_EQ(std::find(a.begin(), a.end(), "--memory"), a.end());
  EXPECT_EQ(std::find(a.begin(), a.end(), "--pids-limit"), a.end());
  EXPECT_EQ(std::find(a.begin(), a.end(), "--ulimit"), a.end());
}

TEST(ContainerRlimits, NeverAboveWhatThisProcessMayGrant) {
  ContainerRlimits r = HostRlimits();
  EXPECT_GT(r.nofile, 0u);
  EXPECT_LE(r.nofile, 1048576u);
  EXPECT_GT(r.nproc, 0u);
  EXPECT_LE(r.nproc, 4194304u);
}

TEST(EngineTime, DockerAndPodmanFormats) {
  EXPECT_EQ(ParseEngineTime("2026-11-26T00:25:38.495475327Z"), 1795652738);
  EXPECT_EQ(ParseEngineTime("2026-11-26 00:25:38.321516557 +0000 UTC"), 1795652738);
  EXPECT_EQ(ParseEngineTime("0001-01-01T00:00:00Z"), -1);
  EXPECT_EQ(ParseEngineTime("garbage"), -1);
}

TEST(ContainerImages, PodmanNamesLocalImages) {
  EXPECT_EQ(ContainerImageRef("docker", "bookworm-1"), "ss-sandbox:bookworm-1");
  EXPECT_EQ(ContainerImageRef("podman", "bookworm-1"), "localhost/ss-sandbox:bookworm-1");
}

}  // namespace
}  // namespace ss
