// OpenSSH's -L / -R grammar, case by case as ssh(1) parses it.
#include "forward_spec.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "error.hpp"

namespace ss {
namespace {

ForwardSpec L(const std::string& s) { return ParseForwardSpec(s, ForwardDirection::kLocal); }
ForwardSpec R(const std::string& s) { return ParseForwardSpec(s, ForwardDirection::kRemote); }

void ExpectTcp(const SocketAddress& a, const std::string& host, int port) {
  EXPECT_TRUE(a.socket_path.empty()) << a.socket_path;
  EXPECT_EQ(a.host, host);
  EXPECT_EQ(a.port, port);
}

void ExpectPath(const SocketAddress& a, const std::string& path) { EXPECT_EQ(a.socket_path, path); }

TEST(ForwardSpec, PortHostPort) {
  ForwardSpec f = L("8080:localhost:80");
  ExpectTcp(f.listen, "", 8080);
  EXPECT_FALSE(f.listen_host_given);
  ExpectTcp(f.target, "localhost", 80);
  EXPECT_EQ(f.direction, ForwardDirection::kLocal);
  EXPECT_EQ(f.text, "8080:localhost:80");
}

TEST(ForwardSpec, BindPortHostPort) {
  ForwardSpec f = R("127.0.0.1:9222:127.0.0.1:9223");
  ExpectTcp(f.listen, "127.0.0.1", 9222);
  EXPECT_TRUE(f.listen_host_given);
  ExpectTcp(f.target, "127.0.0.1", 9223);
  EXPECT_EQ(f.direction, ForwardDirection::kRemote);
}

TEST(ForwardSpec, EmptyAndStarBindAddressMeanEveryAddress) {
  ForwardSpec f = L(":8080:db:5432");
  ExpectTcp(f.listen, "", 8080);
  EXPECT_TRUE(f.listen_host_given);
  f = L("*:8080:db:5432");
  ExpectTcp(f.listen, "*", 8080);
}

TEST(ForwardSpec, Ipv6InBrackets) {
  ForwardSpec f = L("[::1]:8080:[fe80::1]:80");
  ExpectTcp(f.listen, "::1", 8080);
  ExpectTcp(f.target, "fe80::1", 80);
}

TEST(ForwardSpec, UnixSocketsEveryMixedForm) {
  ForwardSpec f = L("/tmp/local.sock:/run/remote.sock");
  ExpectPath(f.listen, "/tmp/local.sock");
  ExpectPath(f.target, "/run/remote.sock");

  f = L("8080:/run/remote.sock");
  ExpectTcp(f.listen, "", 8080);
  ExpectPath(f.target, "/run/remote.sock");

  f = L("127.0.0.1:8080:/run/remote.sock");
  ExpectTcp(f.listen, "127.0.0.1", 8080);
  ExpectPath(f.target, "/run/remote.sock");

  f = L("/tmp/local.sock:db:5432");
  ExpectPath(f.listen, "/tmp/local.sock");
  ExpectTcp(f.target, "db", 5432);

  f =
      R("/tmp/claude-mcp-browser-bridge-sandbox/bridge.sock:/tmp/claude-mcp-browser-bridge-me/"
        "1.sock");
  ExpectPath(f.listen, "/tmp/claude-mcp-browser-bridge-sandbox/bridge.sock");
  ExpectPath(f.target, "/tmp/claude-mcp-browser-bridge-me/1.sock");

  f = R("0:/tmp/host.sock");
  ExpectTcp(f.listen, "", 0);
  ExpectPath(f.target, "/tmp/host.sock");
}

TEST(ForwardSpec, RelativeSocketPathNeedsASlash) {
  ForwardSpec f = L("./a.sock:./b.sock");
  ExpectPath(f.listen, "./a.sock");
  ExpectPath(f.target, "./b.sock");
}

TEST(ForwardSpec, BracketsAndBackslashesEscapeColons) {
  ForwardSpec f = L("[/tmp/a:b.sock]:[/tmp/c:d.sock]");
  ExpectPath(f.listen, "/tmp/a:b.sock");
  ExpectPath(f.target, "/tmp/c:d.sock");
  f = L("/tmp/a\\:b.sock:/tmp/c.sock");
  ExpectPath(f.listen, "/tmp/a:b.sock");
}

TEST(ForwardSpec, ServiceNamesAndPortZero) {
  ForwardSpec f = L("0:localhost:ssh");
  ExpectTcp(f.listen, "", 0);
  ExpectTcp(f.target, "localhost", 22);
  f = R("0:localhost:80");
  ExpectTcp(f.listen, "", 0);
}

TEST(ForwardSpec, EnvironmentVariablesAreExpandedFirst) {
  ::setenv("SS_TEST_FWD_DIR", "/tmp/fwd", 1);
  ForwardSpec f = L("${SS_TEST_FWD_DIR}/a.sock:localhost:80");
  ExpectPath(f.listen, "/tmp/fwd/a.sock");
  // A variable that expands to a path makes the field a path, as in ssh.
  ::setenv("SS_TEST_FWD_SOCK", "/tmp/fwd/b.sock", 1);
  f = R("${SS_TEST_FWD_SOCK}:${SS_TEST_FWD_DIR}/c.sock");
  ExpectPath(f.listen, "/tmp/fwd/b.sock");
  ExpectPath(f.target, "/tmp/fwd/c.sock");
}

TEST(ForwardSpec, TrailingColonIsAllowedAsInSsh) {
  ForwardSpec f = L("8080:localhost:80:");
  ExpectTcp(f.target, "localhost", 80);
}

TEST(ForwardSpec, BadSpecsUseSshWording) {
  for (const char* bad : {"", "8080", "8080:localhost", "127.0.0.1:8080", "x:localhost:80",
                          "8080:localhost:0", "8080:localhost:65536", "8080:localhost:http-nope",
                          "a:b:c:d:e", "99999:localhost:80", "[::1:8080:h:80", "[::1]x:8080:h:80",
                          "8080:localhost:80\\", "${SS_TEST_FWD_UNSET}:localhost:80", "8080::80"}) {
    try {
      L(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), kExitUsage);
      EXPECT_EQ(std::string(e.what()),
                std::string("bad local forwarding specification '") + bad + "'");
    }
  }
  try {
    R("8080");
    ADD_FAILURE() << "dynamic remote forward accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "bad remote forwarding specification '8080'");
  }
}

TEST(ForwardSpec, SocketPathLongerThanSunPathIsRefused) {
  std::string path = "/tmp/" + std::string(120, 'x') + ".sock";
  EXPECT_THROW(L(path + ":localhost:80"), Error);
  EXPECT_NO_THROW(L("/tmp/" + std::string(90, 'x') + ".sock:localhost:80"));
}

TEST(ForwardSpec, Describe) {
  EXPECT_EQ(DescribeForward(L("8080:localhost:80")), "-L 8080:localhost:80");
  EXPECT_EQ(DescribeForward(R("[::1]:1:/tmp/a.sock")), "-R [::1]:1:/tmp/a.sock");
  EXPECT_EQ(DescribeForward(R("/tmp/a.sock:h:2")), "-R /tmp/a.sock:h:2");
}

}  // namespace
}  // namespace ss
