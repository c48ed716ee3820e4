// Clients that vanish mid-download, and many clients at once.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "viz_fixture.h"

namespace minfer::viz::test {
namespace {

class VizRobustness : public VizFixture {
 protected:
  void SetUp() override {
    VizFixture::SetUp();
    TraceSpec big;
    big.seed = 42;
    big.decode_steps = 1500;  // ~10 MB: far more than the socket buffers hold
    big_text = make_trace(big).dump();
    write_file(traces.path() / "big.json", big_text);
    ASSERT_GT(big_text.size(), size_t(8) << 20);
    TraceSpec medium;
    medium.seed = 7;
    medium.decode_steps = 200;
    medium_text = make_trace(medium).dump();
    write_file(traces.path() / "medium.json", medium_text);
  }
  std::string big_text, medium_text;
};

// Reads a little of the response, then closes the socket (RST with SO_LINGER 0).
size_t start_and_abandon(int port, const std::string& extra_headers) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return 0;
  }
  std::string req = "GET /api/traces/big.json HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers + "\r\n";
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  size_t got = 0;
  char buf[8192];
  while (got < 64 * 1024) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  linger hard{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  ::close(fd);
  return got;
}

TEST_F(VizRobustness, ClientDisconnectingMidDownloadDoesNotHurtTheServer) {
  for (int i = 0; i < 4; ++i) {
    EXPECT_GE(start_and_abandon(port(), ""), size_t(64 * 1024));
    EXPECT_GE(start_and_abandon(port(), "Accept-Encoding: gzip\r\n"), size_t(1024));
  }
  auto cli = client();
  cli.set_decompress(false);
  auto r = cli.Get("/api/traces/big.json", {{"Accept-Encoding", "identity"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(r->body == big_text) << "body of " << r->body.size() << " bytes differs";
  auto gz = cli.Get("/api/traces/big.json", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(gz);
  EXPECT_TRUE(gzip_decompress(gz->body, "big") == big_text);
  EXPECT_EQ(cli.Get("/api/health")->status, 200);
}

TEST_F(VizRobustness, EightConcurrentClients) {
  std::atomic<int> ok{0}, bad{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&, c] {
      auto cli = client();
      cli.set_decompress(false);
      for (int round = 0; round < 3; ++round) {
        bool gzip = (c + round) % 2 == 0;
        auto medium = cli.Get("/api/traces/medium.json",
                              {{"Accept-Encoding", gzip ? "gzip" : "identity"}});
        bool good = medium && medium->status == 200 &&
                    (gzip ? gzip_decompress(medium->body, "medium") : medium->body) == medium_text;
        auto list = cli.Get("/api/traces");
        good = good && list && list->status == 200 && json::parse(list->body).size() == 9;
        auto cmp = cli.Get("/api/compare?a=tiny-mmq.json&b=tiny-f16.json");
        good = good && cmp && cmp->status == 200;
        auto small = cli.Get("/api/traces/tiny-mmq.json", {{"Accept-Encoding", "identity"}});
        good = good && small && small->body == mmq_text;
        (good ? ok : bad)++;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 24);
  EXPECT_EQ(bad.load(), 0);
}

// A slow reader holding a connection open does not stop others from being served.
TEST_F(VizRobustness, SlowReaderDoesNotBlockOthers) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string req = "GET /api/traces/big.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);  // and never read
  auto cli = client();
  for (int i = 0; i < 5; ++i) {
    auto r = cli.Get("/api/health");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  ::close(fd);
}

}  // namespace
}  // namespace minfer::viz::test
