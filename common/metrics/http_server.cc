// MetricsHttpServer and HttpGet over Boost.Beast. The server is one
// io_context on one thread running an accept loop coroutine and one
// coroutine per connection: read a request, answer it, close. Scrapes are
// rare (seconds apart) and small, so one thread is plenty, and a slow client
// is bounded by the per-connection deadline, not by a thread of its own.
#include "common/metrics/http_server.h"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "common/log.h"
#include "common/metrics/metrics.h"
#include "common/net/asio.h"  // before Beast: it works around an include bug of Boost 1.74

namespace sfs::metrics {

namespace asio = boost::asio;
namespace beast = boost::beast;
using net::awaitable;
using net::tcp;
namespace http = beast::http;

namespace {

constexpr auto kConnDeadline = std::chrono::seconds(10);

http::response<http::string_body> Answer(const http::request<http::string_body>& req,
                                         const std::function<std::string()>& render) {
  http::response<http::string_body> res;
  res.version(req.version());
  res.keep_alive(false);
  std::string_view target(req.target().data(), req.target().size());
  if (target != "/metrics" && target.rfind("/metrics?", 0) != 0) {
    res.result(http::status::not_found);
    res.set(http::field::content_type, "text/plain");
    res.body() = "only /metrics is served here\n";
  } else if (req.method() != http::verb::get && req.method() != http::verb::head) {
    res.result(http::status::method_not_allowed);
    res.set(http::field::allow, "GET, HEAD");
  } else {
    res.result(http::status::ok);
    res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    res.body() = render();
  }
  res.prepare_payload();
  return res;
}

awaitable<void> Session(tcp::socket socket, const std::function<std::string()>* render) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buf;
  http::request<http::string_body> req;
  boost::system::error_code ec;
  stream.expires_after(kConnDeadline);
  co_await http::async_read(stream, buf, req, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return;
  http::response<http::string_body> res = Answer(req, *render);
  co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
}

}  // namespace

struct MetricsHttpServer::Impl {
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::function<std::string()> render;
  std::string host;
  std::thread thread;

  awaitable<void> AcceptLoop() {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket s = co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      if (ec) continue;  // e.g. EMFILE: the next scrape tries again
      asio::co_spawn(io, Session(std::move(s), &render), asio::detached);
    }
  }
};

MetricsHttpServer::MetricsHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& host, uint16_t port, std::function<std::string()> render) {
  auto impl = std::make_unique<Impl>();
  impl->render = std::move(render);
  impl->host = host;
  boost::system::error_code ec;
  tcp::resolver resolver(impl->io);
  auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec || endpoints.empty()) {
    return Status::Errno(EINVAL, "metrics: cannot resolve " + host + ": " + ec.message());
  }
  tcp::endpoint ep = *endpoints.begin();
  if (impl->acceptor.open(ep.protocol(), ec) ||
      impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec) ||
      impl->acceptor.bind(ep, ec) ||
      impl->acceptor.listen(asio::socket_base::max_listen_connections, ec)) {
    return Status::Errno(
        ec.value() != 0 ? ec.value() : EIO,
        "metrics: cannot listen on " + host + ":" + std::to_string(port) + ": " + ec.message());
  }
  Impl* p = impl.get();
  asio::co_spawn(p->io, p->AcceptLoop(), asio::detached);
  p->thread = std::thread([p] { p->io.run(); });
  return std::make_unique<MetricsHttpServer>(std::move(impl));
}

MetricsHttpServer::~MetricsHttpServer() {
  asio::post(impl_->io, [p = impl_.get()] {
    boost::system::error_code ec;
    p->acceptor.close(ec);
  });
  impl_->io.stop();
  impl_->thread.join();
}

std::string MetricsHttpServer::address() const {
  return impl_->host + ":" + std::to_string(port());
}

uint16_t MetricsHttpServer::port() const {
  boost::system::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

Result<std::unique_ptr<MetricsHttpServer>> ServeMetrics(const std::string& listen,
                                                        const Registry* registry) {
  size_t colon = listen.rfind(':');
  char* end = nullptr;
  long port = colon == std::string::npos ? -1 : std::strtol(listen.c_str() + colon + 1, &end, 10);
  if (colon == std::string::npos || colon == 0 || port < 0 || port > 65535 || *end != '\0' ||
      end == listen.c_str() + colon + 1) {
    return Status::Errno(EINVAL, "--metrics-listen: not HOST:PORT: " + listen);
  }
  std::string host = listen.substr(0, colon);
  SFS_ASSIGN_OR_RETURN(std::unique_ptr<MetricsHttpServer> server,
                       MetricsHttpServer::Start(host, static_cast<uint16_t>(port),
                                                [registry] { return registry->Render(); }));
  std::string addr = server->address();
  LOG_INFO("metrics: serving GET /metrics on " << addr);
  std::printf("METRICS %s\n", addr.c_str());
  std::fflush(stdout);
  return server;
}

Result<std::string> HttpGet(const std::string& host_port, const std::string& path,
                            std::chrono::milliseconds timeout) {
  size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == host_port.size()) {
    return Status::Errno(EINVAL, "not HOST:PORT: " + host_port);
  }
  std::string host = host_port.substr(0, colon), port = host_port.substr(colon + 1);
  asio::io_context io;
  tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  boost::system::error_code ec;
  auto endpoints = resolver.resolve(host, port, ec);
  if (ec) return Status::Errno(EHOSTUNREACH, host_port + ": " + ec.message());
  stream.expires_after(timeout);
  http::request<http::empty_body> req{http::verb::get, path, 11};
  req.set(http::field::host, host);
  http::response<http::string_body> res;
  beast::flat_buffer buf;
  // Run asynchronously so the deadline covers connect, write and read.
  stream.async_connect(endpoints, [&](boost::system::error_code e, const tcp::endpoint&) {
    if ((ec = e)) return;
    http::async_write(stream, req, [&](boost::system::error_code e, size_t) {
      if ((ec = e)) return;
      http::async_read(stream, buf, res, [&](boost::system::error_code e, size_t) { ec = e; });
    });
  });
  io.run();
  if (ec == beast::error::timeout) return Status::Errno(ETIMEDOUT, host_port + ": timed out");
  if (ec) {
    int code = ec.category() == boost::system::system_category() ? ec.value() : EPROTO;
    return Status::Errno(code, host_port + ": " + ec.message());
  }
  if (res.result() != http::status::ok) {
    return Status::Errno(
        EPROTO, host_port + path + ": HTTP " + std::to_string(static_cast<int>(res.result_int())));
  }
  return std::move(res.body());
}

}  // namespace sfs::metrics
