#!/usr/bin/env bash
# Builds the Debian packages of StripeFS from this tree:
#   stripefs-server  sfs-mds, sfs-oss, their systemd units, man pages, example option files
#   stripefs-client  sfs-mount, the mount helper /sbin/mount.fuse.sfs, sfs-demo (libsfs)
#   stripefs-tools   sfs (admin CLI, fsck included), sfs-bench
#
#   scripts/package-deb.sh [--build-dir DIR] [--out DIR]
#
# It configures DIR (default ./build-deb) with --prefix=/usr and no tests,
# builds it, stages `meson install --strip` there and splits the staged tree
# into one root per package, with Depends from dpkg-shlibdeps (the Debian
# packages of the shared libraries the binaries link) plus what the scripts
# need; then dpkg-deb builds OUT/stripefs-*_VERSION_ARCH.deb (default ./dist-deb).
# With ccache (scripts/install-deps.sh installs it) a build dir beside ./build
# recompiles nothing the main build compiled. Install on Debian 12 with
#   apt install ./dist-deb/stripefs-*.deb
# No maintainer scripts: after installing, `systemctl daemon-reload` and enable
# the units (README, "Operating StripeFS").
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=build-deb
out=dist-deb
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "package-deb.sh: unknown argument '$1' (--build-dir DIR, --out DIR)" >&2; exit 2 ;;
  esac
done
for tool in dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || { echo "package-deb.sh: $tool not found (scripts/install-deps.sh)" >&2; exit 1; }
done

if [ ! -f "$build/build.ninja" ]; then
  # No MPI: sfs-bench forks its tasks; an MPI build would make the package depend on OpenMPI.
  meson setup "$build" --prefix=/usr --buildtype=release -Dtests=false -Dmpi=disabled -Dfuse=enabled -Drdma=enabled -Dpython=disabled >/dev/null
fi
# The Python binding (client/python/) is in no package yet: leave it out of
# the staged tree, also in a build dir set up before the option existed.
python_opt=$(meson introspect --buildoptions "$build" |
  python3 -c 'import json, sys; print(next((o["value"] for o in json.load(sys.stdin) if o["name"] == "python"), ""))')
if [ "$python_opt" != disabled ]; then
  meson setup --reconfigure "$build" -Dpython=disabled >/dev/null
fi
prefix=$(meson introspect --buildoptions "$build" |
  python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
if [ "$prefix" != /usr ]; then
  echo "package-deb.sh: $build has prefix $prefix, packages need /usr (use a new --build-dir)" >&2
  exit 1
fi
ninja -C "$build" ${NINJA_JOBS:+-j$NINJA_JOBS} >/dev/null
version=$(meson introspect --projectinfo "$build" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
arch=$(dpkg --print-architecture)
maintainer="StripeFS developers <stripefs-devel@example.org>"
# The changelog's date: the last commit's (reproducible), or now outside git.
date=$(git -C "$src" log -1 --format=%cD 2>/dev/null || date -R)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/stage
meson install -C "$build" --destdir "$stage" --no-rebuild --strip >/dev/null

# Package -> the staged files it owns (paths relative to the root).
declare -A files
files[stripefs-server]="usr/bin/sfs-mds usr/bin/sfs-oss
  usr/lib/systemd/system/sfs-mds.service usr/lib/systemd/system/sfs-oss@.service
  usr/share/man/man8/sfs-mds.8 usr/share/man/man8/sfs-oss.8
  usr/share/doc/stripefs/examples/mds.conf usr/share/doc/stripefs/examples/oss-a.conf"
files[stripefs-client]="usr/bin/sfs-mount usr/bin/sfs-demo sbin/mount.fuse.sfs usr/share/doc/stripefs/examples/client.conf
  usr/share/man/man8/sfs-mount.8 usr/share/man/man8/mount.fuse.sfs.8 usr/share/man/man1/sfs-demo.1"
files[stripefs-tools]="usr/bin/sfs usr/bin/sfs-bench
  usr/share/man/man1/sfs.1 usr/share/man/man1/sfs-bench.1"
# Beyond the shared libraries: the client runs fusermount3 and reads /etc/fuse.conf.
declare -A extra_depends=([stripefs-server]="" [stripefs-client]="fuse3" [stripefs-tools]="")
declare -A recommends=([stripefs-server]="" [stripefs-client]="stripefs-tools" [stripefs-tools]="stripefs-client")
declare -A summary
summary[stripefs-server]="StripeFS parallel file system - metadata and object servers"
summary[stripefs-client]="StripeFS parallel file system - FUSE client and mount helper"
summary[stripefs-tools]="StripeFS parallel file system - admin CLI and benchmarks"
declare -A body
body[stripefs-server]=" sfs-mds keeps the namespace and striping layouts in LevelDB; sfs-oss
 serves object storage targets. systemd units sfs-mds.service and
 sfs-oss@.service (one per OSS instance) are included."
body[stripefs-client]=" sfs-mount mounts StripeFS through FUSE; mount.fuse.sfs lets mount(8) and
 /etc/fstab mount it (type fuse.sfs). sfs-demo exercises the native
 client library libsfs, which is linked statically into every binary."
body[stripefs-tools]=" sfs sets and shows striping layouts, pools, space and server state and
 checks the file system (sfs fsck), in the manner of Lustre's lfs.
 sfs-bench runs IOR- and mdtest-style benchmarks."

# Every staged file must belong to exactly one package: a new installed file
# without a home here fails the build instead of being dropped.
listed=$(printf '%s\n' ${files[@]} | sort)
staged=$(cd "$stage" && find . -type f -o -type l | sed 's|^\./||' | sort)
unowned=$(comm -13 <(echo "$listed") <(echo "$staged"))
if [ -n "$unowned" ]; then
  echo "package-deb.sh: installed but in no package: $unowned" >&2
  exit 1
fi

mkdir -p "$out"
for pkg in stripefs-server stripefs-client stripefs-tools; do
  root=$work/debian/$pkg
  for f in ${files[$pkg]}; do
    [ -e "$stage/$f" ] || { echo "package-deb.sh: $f was not installed" >&2; exit 1; }
    mkdir -p "$root/$(dirname "$f")"
    cp -a "$stage/$f" "$root/$f"
  done
  find "$root/usr/share/man" -type f -exec gzip -9n {} + 2>/dev/null || true
  doc=$root/usr/share/doc/$pkg
  mkdir -p "$doc"
  [ -d "$root/usr/share/doc/stripefs" ] && mv "$root/usr/share/doc/stripefs/examples" "$doc/" &&
    rmdir "$root/usr/share/doc/stripefs"
  cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: stripefs
Comment: Built from the StripeFS source tree by scripts/package-deb.sh.
 No license has been declared for StripeFS yet.
EOF
  # A native package's changelog (lintian: no-changelog otherwise).
  printf '%s\n' "stripefs ($version) unstable; urgency=medium" "" \
    "  * Built from the source tree by scripts/package-deb.sh." "" \
    " -- $maintainer  $date" | gzip -9n >"$doc/changelog.gz"
  # Shared-library dependencies of the ELF files in the package.
  elves=()
  while IFS= read -r -d '' f; do
    if head -c 4 "$f" | grep -q $'\x7fELF'; then elves+=("$f"); fi
  done < <(find "$root" -type f -perm -u+x -print0)
  depends=""
  if [ ${#elves[@]} -gt 0 ]; then
    : >"$work/debian/control"
    depends=$(cd "$work" && dpkg-shlibdeps -O "${elves[@]#"$work/"}" 2>/dev/null |
      sed -n 's/^shlibs:Depends=//p')
  fi
  [ -n "${extra_depends[$pkg]}" ] && depends="${depends:+$depends, }${extra_depends[$pkg]}"
  size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
  mkdir -p "$root/DEBIAN"
  {
    echo "Package: $pkg"
    echo "Version: $version"
    echo "Architecture: $arch"
    echo "Maintainer: $maintainer"
    echo "Installed-Size: $size"
    [ -n "$depends" ] && echo "Depends: $depends"
    [ -n "${recommends[$pkg]}" ] && echo "Recommends: ${recommends[$pkg]}"
    echo "Section: admin"
    echo "Priority: optional"
    echo "Description: ${summary[$pkg]}"
    echo "${body[$pkg]}"
  } >"$root/DEBIAN/control"
  (cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | sort |
    xargs md5sum) >"$root/DEBIAN/md5sums"
  deb="$out/${pkg}_${version}_${arch}.deb"
  dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
  echo "$deb"
done
