// The one header that includes Boost.Asio. Include it only from .cc files of
// transports (never from a header other .cc files include): Asio is heavy to
// compile.
//
// Boost 1.74's asio/awaitable.hpp uses std::exchange without including
// <utility>; with GCC 12 in C++20 mode that fails, so <utility> comes first.
#pragma once

#include <utility>

#include <boost/asio.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sfs::net {
namespace asio = boost::asio;
using asio::awaitable;
using asio::ip::tcp;
}  // namespace sfs::net
