// What ss-net's proxy reads of an HTTP request, and what it sends on.
#include "http_head.hpp"

#include "gtest/gtest.h"

namespace ss {
namespace {

TEST(HttpHead, ReadsARequestHead) {
  std::string text =
      "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n"
      "Proxy-Connection:  keep-alive \r\n\r\nbody";
  EXPECT_EQ(HttpHeadLength(text), text.size() - 4);
  EXPECT_EQ(HttpHeadLength(text.substr(0, 20)), 0u);
  auto head = ParseHttpHead(text);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->method, "CONNECT");
  EXPECT_EQ(head->target, "api.example.com:443");
  EXPECT_EQ(*head->Header("proxy-connection"), "keep-alive");
  EXPECT_FALSE(head->Header("Upgrade"));
}

TEST(HttpHead, RefusesMalformedHeads) {
  for (const char* bad :
       {"GET / HTTP/1.1\r\n", "GET  / HTTP/1.1\r\n\r\n", "GET / HTTP/2\r\n\r\n",
        "GET / HTTP/1.1\r\nno colon\r\n\r\n", "GET / HTTP/1.1\r\n folded: x\r\n\r\n",
        "G(T / HTTP/1.1\r\n\r\n", "GET /\x01 HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\n: x\r\n\r\n",
        "GET / HTTP/1.1\r\nA\nB: x\r\n\r\n"}) {
    EXPECT_FALSE(ParseHttpHead(bad)) << bad;
  }
  std::string huge = "GET / HTTP/1.1\r\nX: " + std::string(kMaxHttpHead, 'a') + "\r\n\r\n";
  EXPECT_FALSE(ParseHttpHead(huge));
}

TEST(HttpHead, HostsPortsAndUrls) {
  EXPECT_EQ(ParseHostPort("example.com:8443", 0)->port, 8443);
  EXPECT_EQ(ParseHostPort("example.com", 80)->port, 80);
  EXPECT_FALSE(ParseHostPort("example.com", 0));
  EXPECT_EQ(ParseHostPort("[2001:db8::1]:443", 0)->host, "2001:db8::1");
  for (const char* bad : {"", ":80", "example.com:", "example.com:0", "example.com:99999", "[::1",
                          "[::1]x", "[::1]:"}) {
    EXPECT_FALSE(ParseHostPort(bad, 80)) << bad;
  }
  auto url = ParseHttpUrl("HTTP://Example.com:8080/a/b?c=d");
  ASSERT_TRUE(url);
  EXPECT_EQ(url->authority.host, "Example.com");
  EXPECT_EQ(url->authority.port, 8080);
  EXPECT_EQ(url->path, "/a/b?c=d");
  EXPECT_EQ(ParseHttpUrl("http://example.com")->path, "/");
  EXPECT_EQ(ParseHttpUrl("http://example.com?x")->path, "/?x");
  EXPECT_FALSE(ParseHttpUrl("https://example.com/"));
  EXPECT_FALSE(ParseHttpUrl("http://user@evil.test@example.com/"));
  EXPECT_FALSE(ParseHttpUrl("/relative"));
}

TEST(HttpHead, TheHostHeaderNamesTheHostDecidedOn) {
  auto problem = [](const std::string& headers, const char* host) {
    auto head = ParseHttpHead("GET http://x/ HTTP/1.1\r\n" + headers + "\r\n");
    EXPECT_TRUE(head) << headers;
    return head ? HostHeaderProblem(*head, host) : std::string("unparsed");
  };
  EXPECT_EQ(problem("Host: allowed.test\r\n", "allowed.test"), "");
  EXPECT_EQ(problem("host: Allowed.Test.:8080\r\n", "allowed.test"), "");
  EXPECT_EQ(problem("Host: [2001:db8::1]:80\r\n", "2001:db8::1"), "");
  EXPECT_EQ(problem("Accept: */*\r\n", "allowed.test"), "");  // none: HTTP/1.0 clients
  EXPECT_EQ(problem("Host: evil.test\r\n", "allowed.test"),
            "the Host header 'evil.test' does not name allowed.test, the host the request is for");
  EXPECT_NE(problem("Host: allowed.test.evil.test\r\n", "allowed.test"), "");
  EXPECT_NE(problem("Host: allowed.test\r\nHOST: evil.test\r\n", "allowed.test"), "");
  EXPECT_NE(problem("Host: allowed.test\r\nHost: allowed.test\r\n", "allowed.test"), "");
  EXPECT_NE(problem("Host: allowed.test@evil.test\r\n", "allowed.test"), "");
  EXPECT_NE(problem("Host: \r\n", "allowed.test"), "");
}

TEST(HttpHead, ForwardedHeadDropsProxyHeadersAndCloses) {
  auto head = ParseHttpHead(
      "GET http://example.com/x HTTP/1.1\r\nHost: example.com\r\nProxy-Authorization: Basic a\r\n"
      "Connection: keep-alive\r\nKeep-Alive: 5\r\nAccept: */*\r\n\r\n");
  ASSERT_TRUE(head);
  EXPECT_EQ(ForwardedHead(*head, "/x"),
            "GET /x HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nConnection: close\r\n\r\n");
  auto upgrade = ParseHttpHead(
      "GET http://example.com/ws HTTP/1.1\r\nHost: example.com\r\nConnection: Upgrade\r\n"
      "Upgrade: websocket\r\n\r\n");
  EXPECT_EQ(ForwardedHead(*upgrade, "/ws"),
            "GET /ws HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\nConnection: "
            "Upgrade\r\n\r\n");
}

}  // namespace
}  // namespace ss
