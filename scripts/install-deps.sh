#!/usr/bin/env bash
# Installs StripeFS's build and test dependencies from Debian 12 packages.
# Idempotent: does nothing when everything is already installed.
set -euo pipefail
pkgs=(meson ninja-build pkg-config g++ libleveldb-dev libprotobuf-dev protobuf-compiler
      libboost-dev libgtest-dev libgmock-dev libfuse3-dev fuse3 libibverbs-dev librdmacm-dev
      attr rsync git tar util-linux procps python3 iproute2 nftables gdb
      libtomlplusplus-dev libsystemd-dev)
# promtool (package prometheus) lints the metrics exposition (metrics_test,
# metrics_integration_test: issue 20).
pkgs+=(prometheus)
# The network-fault test's delay/reorder phases: iptables NFQUEUE rules and
# sfs-nfq-delay (tests/netfault/nfq_delay.cc) built on libnetfilter-queue.
pkgs+=(iptables libnetfilter-queue-dev)
# Erasure-code parity (common/ec/): ISA-L's Reed–Solomon.
pkgs+=(libisal-dev)
# Capabilities (common/auth/): HMAC-SHA256 from OpenSSL libcrypto.
pkgs+=(libssl-dev)
# Operations (dist/, scripts/package-deb.sh, tests/ops): man pages checked with
# groff and man, units with systemd-analyze, packages built with dpkg-deb and
# dpkg-shlibdeps and lintian; ccache lets the package build reuse the main build's objects.
pkgs+=(groff-base man-db systemd dpkg-dev lintian ccache)
# The Python binding (client/python/, import stripefs): headers and pybind11;
# numpy for its readinto-a-numpy-array test (skipped without it).
pkgs+=(python3-dev pybind11-dev python3-numpy)
# stripefs.torch with the stock DataLoader (python_torch_test, bench/train_loader.py)
# and the small transformer of the KV restore benchmark (bench/kv_restore.py):
# Debian's PyTorch (CPU). Required: python_torch_test fails without it.
pkgs+=(python3-torch)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# FUSE needs its device; load the module if the kernel has it as one.
if [ ! -e /dev/fuse ]; then
  modprobe fuse 2>/dev/null || true
fi
echo "install-deps: ok"
