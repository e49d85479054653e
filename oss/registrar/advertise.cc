// AdvertiseAddress: resolves a wildcard listen host to a routable local IP by
// "connecting" a UDP socket towards the MDS (no packet is sent) and reading
// the local address the kernel picked.
#include "oss/registrar/advertise.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/rpc/rpc.h"

namespace sfs::oss {
namespace {

std::string JoinHostPort(const std::string& host, uint16_t port) {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<std::string> LocalIpTowards(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) return Status::Errno(EHOSTUNREACH, "resolve " + host + ": " + gai_strerror(rc));
  Status st = Status::Errno(EHOSTUNREACH, "no route to " + host);
  std::string ip;
  for (addrinfo* ai = res; ai != nullptr && ip.empty(); ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    char buf[INET6_ADDRSTRLEN] = {0};
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      auto* v6 = reinterpret_cast<sockaddr_in6*>(&local);
      auto* v4 = reinterpret_cast<sockaddr_in*>(&local);
      const void* a = local.ss_family == AF_INET6 ? static_cast<const void*>(&v6->sin6_addr)
                                                  : static_cast<const void*>(&v4->sin_addr);
      if (::inet_ntop(local.ss_family, a, buf, sizeof(buf)) != nullptr) ip = buf;
    }
    ::close(fd);
  }
  ::freeaddrinfo(res);
  if (ip.empty()) return st;
  return ip;
}

}  // namespace

Result<std::string> AdvertiseAddress(const std::string& listen_host, uint16_t bound_port,
                                     const std::string& mds_address) {
  if (listen_host != "0.0.0.0" && listen_host != "::" && !listen_host.empty()) {
    return JoinHostPort(listen_host, bound_port);
  }
  std::string mds_host;
  uint16_t mds_port = 0;
  SFS_RETURN_IF_ERROR(rpc::ParseAddress(mds_address, &mds_host, &mds_port));
  SFS_ASSIGN_OR_RETURN(std::string ip, LocalIpTowards(mds_host, mds_port));
  return JoinHostPort(ip, bound_port);
}

}  // namespace sfs::oss
