// Credential injection's HTTP side, with hostile requests: placeholders replaced only in header
// values and only for their hosts, CR/LF and NUL never reaching upstream, ambiguous bodies
// refused, chunked bodies followed however they are cut; and injection rules as the policy file
// holds them.
#include "http_inject.hpp"

#include <random>

#include "error.hpp"
#include "gtest/gtest.h"

namespace ss {
namespace {

const std::string kPh = "ss-placeholder-0123456789abcdef";
const std::string kOther = "ss-placeholder-other-0123456789";
const std::string kSecret = "sk-real-secret-value";

NetPolicy Policy() {
  NetPolicy p;
  p.inject.push_back({"API_KEY", kPh, {"api.anthropic.com"}, {NetSecretSource::kEnv, "K", {}, {}}});
  p.inject.push_back(
      {"GH_TOKEN", kOther, {"api.github.com"}, {NetSecretSource::kEnv, "G", {}, {}}});
  return p;
}

int lookups = 0;
std::optional<std::string> Lookup(const NetInjection& i, std::string* why) {
  ++lookups;
  if (i.secret == "API_KEY") return kSecret;
  *why = "$G is not set";
  return std::nullopt;
}

HttpHead Head(const std::string& text) {
  auto h = ParseHttpHead(text);
  EXPECT_TRUE(h) << text;
  return h.value_or(HttpHead{});
}

InjectedHead Inject(const std::string& text, const std::string& host = "api.anthropic.com") {
  return InjectSecrets(Head(text), host, Policy(), Lookup);
}

TEST(InjectSecrets, ReplacesThePlaceholderInTheHeadersItGoesIn) {
  auto r = Inject("POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\nx-api-key: " + kPh +
                  "\r\nAuthorization: Bearer " + kPh + "," + kPh + "\r\nContent-Length: 2\r\n\r\n");
  ASSERT_EQ(r.status, InjectedHead::kOk) << r.reason;
  EXPECT_EQ(r.head, "POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\nx-api-key: " +
                        kSecret + "\r\nAuthorization: Bearer " + kSecret + "," + kSecret +
                        "\r\nContent-Length: 2\r\n\r\n");
  EXPECT_EQ(r.injected, std::vector<std::string>{"API_KEY"});
}

TEST(InjectSecrets, APlaceholderInAnotherHeaderIsRefusedSoNoEchoCarriesTheValueBack) {
  // A server that reflects a request header (a debug endpoint, an error page) would hand the
  // sandbox the real value: the placeholder goes in its own headers only.
  for (std::string header : {"X-Echo", "Cookie", "User-Agent", "X-Api-Key-Copy", "Referer"}) {
    auto r = Inject("GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nx-api-key: " + kPh + "\r\n" +
                    header + ": " + kPh + "\r\n\r\n");
    EXPECT_EQ(r.status, InjectedHead::kRefused) << header;
    EXPECT_EQ(r.code, 403);
    EXPECT_EQ(r.reason,
              "the placeholder of secret API_KEY goes in the authorization or x-api-key "
              "header only, not in " +
                  header);
    EXPECT_TRUE(r.head.empty());
  }
  // Header names are matched whatever their case; config may name others.
  NetPolicy p = Policy();
  p.inject[0].headers = {"x-sentry-auth"};
  auto r = InjectSecrets(
      Head("GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nX-Sentry-AUTH: k=" + kPh + "\r\n\r\n"),
      "api.anthropic.com", p, Lookup);
  ASSERT_EQ(r.status, InjectedHead::kOk) << r.reason;
  EXPECT_NE(r.head.find("X-Sentry-AUTH: k=" + kSecret + "\r\n"), std::string::npos);
  r = InjectSecrets(
      Head("GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nAuthorization: " + kPh + "\r\n\r\n"),
      "api.anthropic.com", p, Lookup);
  EXPECT_EQ(r.status, InjectedHead::kRefused);
}

TEST(InjectSecrets, LeavesARequestWithoutPlaceholdersAsItIsAndReadsNoSecret) {
  lookups = 0;
  std::string text = "GET / HTTP/1.1\r\nHost: api.anthropic.com:443\r\nAccept: */*\r\n\r\n";
  auto r = Inject(text);
  ASSERT_EQ(r.status, InjectedHead::kOk);
  EXPECT_EQ(r.head, text);
  EXPECT_EQ(lookups, 0);
  EXPECT_TRUE(r.injected.empty());
}

TEST(InjectSecrets, APlaceholderForAnotherHostIsRefusedNotSent) {
  auto r = Inject("GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nAuthorization: token " + kOther +
                  "\r\n\r\n");
  EXPECT_EQ(r.status, InjectedHead::kRefused);
  EXPECT_EQ(r.code, 403);
  EXPECT_EQ(r.secret, "GH_TOKEN");
  EXPECT_EQ(r.reason,
            "the placeholder of secret GH_TOKEN is for api.github.com only, not for "
            "api.anthropic.com");
  EXPECT_TRUE(r.head.empty());
  // Even beside one that is declared for the host, in the same value or another.
  r = Inject("GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nx-api-key: " + kPh + kOther +
             "\r\n\r\n");
  EXPECT_EQ(r.status, InjectedHead::kRefused);
  EXPECT_TRUE(r.head.find(kSecret) == std::string::npos);
}

TEST(InjectSecrets, TheHostMustBeTheConnectionsOnce) {
  EXPECT_EQ(Inject("GET / HTTP/1.1\r\nHost: evil.test\r\nx-api-key: " + kPh + "\r\n\r\n").status,
            InjectedHead::kRefused);
  EXPECT_EQ(Inject("GET / HTTP/1.1\r\nx-api-key: " + kPh + "\r\n\r\n").status,
            InjectedHead::kRefused);
  EXPECT_EQ(Inject("GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nHost: evil.test\r\n\r\n").status,
            InjectedHead::kRefused);
  EXPECT_EQ(Inject("GET / HTTP/1.1\r\nHost: API.Anthropic.COM.\r\n\r\n").status, InjectedHead::kOk);
  // An absolute-form target could name another host.
  EXPECT_EQ(Inject("GET http://evil.test/ HTTP/1.1\r\nHost: api.anthropic.com\r\n\r\n").code, 400);
}

TEST(InjectSecrets, ControlCharactersInValuesAreRefused) {
  // CR and LF cannot reach a value through the parser; a bare CR, NUL or other control byte is
  // refused here, before the secret is read.
  lookups = 0;
  for (std::string bad : {std::string("a\0b", 3),
                          std::string("a\x0b"
                                      "b"),
                          std::string("a\x7f")}) {
    auto r =
        Inject("GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nx-api-key: " + bad + kPh + "\r\n\r\n");
    EXPECT_EQ(r.status, InjectedHead::kRefused);
    EXPECT_EQ(r.code, 400);
  }
  EXPECT_EQ(lookups, 0);
  EXPECT_FALSE(
      ParseHttpHead("GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nX: a\rInjected: 1\r\n\r\n"));
  EXPECT_FALSE(
      ParseHttpHead("GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nX: a\nInjected: 1\r\n\r\n"));
  // A tab is allowed.
  EXPECT_EQ(Inject("GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nX: a\tb\r\n\r\n").status,
            InjectedHead::kOk);
}

TEST(InjectSecrets, ASecretValueThatWouldSplitTheHeadIsNotSent) {
  NetPolicy p = Policy();
  for (std::string value : {std::string("v\r\nInjected: 1"), std::string("v\n"), std::string()}) {
    auto r = InjectSecrets(
        Head("GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nx-api-key: " + kPh + "\r\n\r\n"),
        "api.anthropic.com", p, [&](const NetInjection&, std::string*) { return value; });
    EXPECT_EQ(r.status, InjectedHead::kFailed);
    EXPECT_EQ(r.code, 502);
    EXPECT_TRUE(r.head.empty());
    EXPECT_EQ(r.reason.find(value.empty() ? "\x01" : value.c_str()), std::string::npos);
  }
}

TEST(InjectSecrets, ASourceThatFailsIs502NamingTheSecret) {
  NetPolicy p = Policy();
  p.inject[1].hosts.push_back("api.anthropic.com");
  auto r = InjectSecrets(
      Head("GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nX-Api-Key: " + kOther + "\r\n\r\n"),
      "api.anthropic.com", p, Lookup);
  EXPECT_EQ(r.status, InjectedHead::kFailed);
  EXPECT_EQ(r.reason, "cannot read secret GH_TOKEN: $G is not set");
}

TEST(InjectSecrets, PlaceholdersOutsideHeaderValuesAreRefused) {
  EXPECT_EQ(Inject("GET /?k=" + kPh + " HTTP/1.1\r\nHost: api.anthropic.com\r\n\r\n").code, 403);
  EXPECT_EQ(Inject("GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nX-" + kPh + ": 1\r\n\r\n").code,
            403);
}

TEST(InjectSecrets, TheSecretIsNeverSearchedForPlaceholders) {
  // A real value that holds a placeholder (its own or another's) is put in once, as it is.
  NetPolicy p = Policy();
  std::string odd = "x" + kPh + kOther;
  auto r = InjectSecrets(
      Head("GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nx-api-key: " + kPh + "\r\n\r\n"),
      "api.anthropic.com", p, [&](const NetInjection&, std::string*) { return odd; });
  ASSERT_EQ(r.status, InjectedHead::kOk);
  EXPECT_NE(r.head.find("x-api-key: " + odd + "\r\n"), std::string::npos);
}

TEST(InjectSecrets, HugeHeadsAreRefusedByTheParser) {
  std::string big =
      "GET / HTTP/1.1\r\nHost: api.anthropic.com\r\nx-api-key: " + std::string(kMaxHttpHead, 'a') +
      kPh + "\r\n\r\n";
  EXPECT_FALSE(ParseHttpHead(big));
}

TEST(FindPlaceholder, FindsAnyPlaceholderInText) {
  EXPECT_EQ(FindPlaceholder(Policy(), "Cookie: a=" + kOther)->secret, "GH_TOKEN");
  EXPECT_EQ(FindPlaceholder(Policy(), "ss-placeholder-0123"), nullptr);
}

TEST(RequestFraming, AmbiguousLengthsAreRefused) {
  auto f = [](const std::string& headers) {
    return RequestFraming(Head("POST / HTTP/1.1\r\nHost: h\r\n" + headers + "\r\n"));
  };
  EXPECT_EQ(f("")->kind, BodyFraming::kNone);
  EXPECT_EQ(f("Content-Length: 12\r\n")->length, 12u);
  EXPECT_EQ(f("Content-Length: 12\r\nContent-Length: 12\r\n")->length, 12u);
  EXPECT_EQ(f("Transfer-Encoding: chunked\r\n")->kind, BodyFraming::kChunked);
  EXPECT_FALSE(f("Content-Length: 12\r\nContent-Length: 13\r\n"));
  EXPECT_FALSE(f("Content-Length: 12\r\nTransfer-Encoding: chunked\r\n"));
  EXPECT_FALSE(f("Transfer-Encoding: gzip\r\n"));
  EXPECT_FALSE(f("Transfer-Encoding: chunked, gzip\r\n"));
  EXPECT_FALSE(f("Content-Length: -1\r\n"));
  EXPECT_FALSE(f("Content-Length: 1e3\r\n"));
  EXPECT_FALSE(f("Content-Length: 99999999999999999999\r\n"));
}

TEST(ResponseFraming, FollowsRfc9112) {
  auto r = [](const std::string& text) {
    auto h = ParseHttpResponseHead(text);
    EXPECT_TRUE(h) << text;
    return *h;
  };
  EXPECT_EQ(ResponseFraming(r("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"), "GET")->length, 5u);
  EXPECT_EQ(ResponseFraming(r("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"), "HEAD")->kind,
            BodyFraming::kNone);
  EXPECT_EQ(ResponseFraming(r("HTTP/1.1 204 No Content\r\n\r\n"), "GET")->kind, BodyFraming::kNone);
  EXPECT_EQ(ResponseFraming(r("HTTP/1.1 200 OK\r\n\r\n"), "GET")->kind, BodyFraming::kUntilClose);
  EXPECT_EQ(
      ResponseFraming(r("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), "GET")->kind,
      BodyFraming::kChunked);
  EXPECT_EQ(r("HTTP/1.1 404 \r\n\r\n").status, 404);
  EXPECT_EQ(r("HTTP/1.0 200\r\n\r\n").status, 200);
  EXPECT_FALSE(ParseHttpResponseHead("HTTP/2 200\r\n\r\n"));
  EXPECT_FALSE(ParseHttpResponseHead("HTTP/1.1 2000 OK\r\n\r\n"));
  EXPECT_FALSE(ParseHttpResponseHead("HTTP/1.1 200 OK\r\nBad Header: x\r\n\r\n"));
}

TEST(ChunkedScanner, FindsTheEndHoweverTheBytesAreCut) {
  std::string body =
      "5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nTrailer: x\r\n\r\n";
  std::string next = "GET / HTTP/1.1\r\n";
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::string all = body + next;
    ChunkedScanner s;
    size_t consumed = 0, at = 0;
    while (!s.done() && at < all.size()) {
      size_t n = 1 + rng() % 9;
      std::string_view piece = std::string_view(all).substr(at, n);
      size_t used = s.Feed(piece);
      ASSERT_FALSE(s.error());
      consumed += used;
      at += used;
      if (used < piece.size()) break;
    }
    EXPECT_TRUE(s.done());
    EXPECT_EQ(consumed, body.size());
  }
}

TEST(ChunkedScanner, RefusesMalformedBodies) {
  for (std::string bad : {"x\r\n", "\r\n", "5\r\nhelloX\r\n", "5\nhello\r\n",
                          "1111111111111111\r\n", "0\r\nTrailer\nx\r\n\r\n"}) {
    ChunkedScanner s;
    s.Feed(bad);
    EXPECT_TRUE(s.error()) << bad;
  }
}

TEST(NetPolicyInject, ReadsAndWritesInjectionRules) {
  std::string text = R"({"mode": "allowlist", "allow": [], "inject": [
    {"secret": "API_KEY", "placeholder": "ss-placeholder-0123456789abcdef",
     "hosts": ["API.anthropic.com."], "from": {"env": "ANTHROPIC_API_KEY"},
     "headers": ["X-Api-Key"]},
    {"secret": "GH", "placeholder": "ss-placeholder-gh-0123456789ab", "hosts": ["api.github.com"],
     "from": {"command": ["pass", "show", "gh"]}},
    {"secret": "F", "placeholder": "ss-placeholder-f-0123456789abc", "hosts": ["a.test"],
     "from": {"file": "/run/secret"}}]})";
  NetPolicy p = NetPolicyFromJson(text);
  ASSERT_EQ(p.inject.size(), 3u);
  EXPECT_EQ(p.inject[0].hosts, std::vector<std::string>{"api.anthropic.com"});
  EXPECT_EQ(p.inject[0].from.env, "ANTHROPIC_API_KEY");
  EXPECT_EQ(p.inject[1].from.kind, NetSecretSource::kCommand);
  EXPECT_EQ(p.inject[2].from.file, "/run/secret");
  EXPECT_EQ(p.inject[0].headers, std::vector<std::string>{"x-api-key"});
  // A policy file from before headers were named gets the two usual ones.
  EXPECT_EQ(p.inject[1].headers, (std::vector<std::string>{"authorization", "x-api-key"}));
  EXPECT_EQ(InjectionsFor(p, "api.github.com").size(), 1u);
  EXPECT_TRUE(InjectionsFor(p, "github.com").empty());
  NetPolicy again = NetPolicyFromJson(NetPolicyToJson(p));
  EXPECT_EQ(NetPolicyToJson(again), NetPolicyToJson(p));
  // A policy without injections is written as before.
  EXPECT_EQ(NetPolicyToJson(NetPolicy{}).find("inject"), std::string::npos);
}

TEST(NetPolicyInject, RefusesBadRules) {
  auto bad = [](const std::string& inject) {
    EXPECT_THROW(NetPolicyFromJson(R"({"mode": "allowlist", "inject": [)" + inject + "]}"), Error)
        << inject;
  };
  std::string ph = R"("placeholder": "ss-placeholder-0123456789abcdef")";
  bad(R"({"secret": "K", "placeholder": "short", "hosts": ["a.test"], "from": {"env": "K"}})");
  bad(R"({"secret": "K", )" + ph + R"(, "hosts": [], "from": {"env": "K"}})");
  bad(R"({"secret": "K", )" + ph + R"(, "hosts": ["10.0.0.1"], "from": {"env": "K"}})");
  bad(R"({"secret": "K", )" + ph + R"(, "hosts": ["a.test,IP:1"], "from": {"env": "K"}})");
  bad(R"({"secret": "K", )" + ph + R"(, "hosts": ["a.test"], "from": {"file": "relative"}})");
  bad(R"({"secret": "K", )" + ph + R"(, "hosts": ["a.test"], "from": {"command": []}})");
  bad(R"({"secret": "K", )" + ph + R"(, "hosts": ["a.test"], "from": {"env": "K", "file": "/x"}})");
  bad(R"({"secret": "K-1", )" + ph + R"(, "hosts": ["a.test"], "from": {"env": "K"}})");
  bad(R"({"secret": "K", )" + ph +
      R"(, "hosts": ["a.test"], "from": {"env": "K"}, "headers": []})");
  bad(R"({"secret": "K", )" + ph +
      R"(, "hosts": ["a.test"], "from": {"env": "K"}, "headers": ["a b"]})");
  bad(R"({"secret": "K", )" + ph +
      R"(, "hosts": ["a.test"], "from": {"env": "K"}, "headers": [1]})");
  // Two placeholders where one holds the other.
  bad(R"({"secret": "A", )" + ph + R"(, "hosts": ["a.test"], "from": {"env": "K"}},
         {"secret": "B", "placeholder": "ss-placeholder-0123456789abcdefXX", "hosts": ["a.test"],
          "from": {"env": "K"}})");
}

}  // namespace
}  // namespace ss
