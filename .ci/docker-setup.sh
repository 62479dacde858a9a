#!/usr/bin/env bash
# Make the sandbox backends' host requirements real on a Debian machine, offline and idempotently:
#   1. install bubblewrap (local backend namespaces), docker.io (docker backend), mmdebstrap and
#      every built-in language's toolchain (core/sandbox/languages.toml: the local backend shows
#      each job its language's packages, read-only);
#   2. start dockerd in the background if no engine answers, and wait until it does;
#   3. build the docker backend's base image from the package registry: a Debian root file system
#      made by mmdebstrap with the same toolchains installed by apt, then `docker import`, tagged
#      by what went into it (core/sandbox/baseimage.py). The downloaded packages and the root
#      file system are cached under $CACHE, so a rebuild needs no download and an image lost
#      from the engine is imported again in a minute.
# Fast when everything is already in place. Called by .ci/run; safe to run by hand as root.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${RLHUB_SANDBOX_CACHE:-/var/cache/rlhub-sandbox}"
DOCKERD_LOG="${RLHUB_DOCKERD_LOG:-/tmp/rlhub-dockerd.log}"
BASEIMAGE=(python3 core/sandbox/baseimage.py)
log() { echo "[docker-setup] $(date +%T) $*" >&2; }
apt_get() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -q "$@"; }

install_packages() {
  local wanted=(bubblewrap docker.io mmdebstrap) missing=() pkg
  mapfile -t -O ${#wanted[@]} wanted < <("${BASEIMAGE[@]}" packages)
  for pkg in "${wanted[@]}"; do
    dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${#missing[@]} packages: ${missing[*]}"
  apt_get install --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
    apt_get update >/dev/null
    apt_get install --no-install-recommends "${missing[@]}" >/dev/null
  }
  log "installed"
}

engine_up() { timeout 5 docker info >/dev/null 2>&1; }

start_dockerd() {
  engine_up && return 0
  log "starting dockerd (log: $DOCKERD_LOG)"
  nohup dockerd >"$DOCKERD_LOG" 2>&1 &
  for _ in $(seq 1 120); do
    engine_up && { log "dockerd is up"; return 0; }
    sleep 0.5
  done
  log "dockerd did not answer within 60 s; last log lines:"; tail -n 20 "$DOCKERD_LOG" >&2
  return 1
}

# The root file system: Debian's essential packages, python3 for the resident worker and every
# toolchain, without documentation (man1 stays: openjdk's install script links into it); /work
# for the jobs. Packages are kept in $CACHE/debs.
make_rootfs() {
  local tarball=$1 sources=() file
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
    [ -f "$file" ] && sources+=("$file")  # the host's own package registry, as apt is set up
  done
  mkdir -p "$CACHE/debs"
  # The host's own install step downloaded the same packages: link them in instead of again.
  find /var/cache/apt/archives -maxdepth 1 -name '*.deb' -exec cp -ln -t "$CACHE/debs/" {} + 2>/dev/null || true
  log "making the root file system with mmdebstrap (packages cached in $CACHE/debs)"
  mmdebstrap --variant=essential --mode=root --format=tar --skip=download/empty \
    --include="$("${BASEIMAGE[@]}" packages | paste -sd,)" \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
    --essential-hook='mkdir -p "$1"/usr/share/man/man1' \
    --setup-hook="sync-in $CACHE/debs /var/cache/apt/archives/" \
    --customize-hook="sync-out /var/cache/apt/archives $CACHE/debs" \
    --customize-hook='mkdir -p "$1/work" && chmod 0711 "$1/work"' \
    --customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
    "$("${BASEIMAGE[@]}" suite)" \
    "$tarball.part" "${sources[@]}" >"$CACHE/mmdebstrap.log" 2>&1 \
    || { tail -n 30 "$CACHE/mmdebstrap.log" >&2; return 1; }
  mv "$tarball.part" "$tarball"
}

build_base_image() {
  local image tarball
  image=$("${BASEIMAGE[@]}" tag)
  if docker image inspect "$image" >/dev/null 2>&1; then return 0; fi
  tarball="$CACHE/rootfs-${image#*:}.tar"
  mkdir -p "$CACHE"
  [ -f "$tarball" ] || make_rootfs "$tarball"
  log "importing $image ($(du -m "$tarball" | cut -f1) MB root file system)"
  docker import \
    --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' --change 'ENV LANG=C.UTF-8' \
    --change 'WORKDIR /work' --change 'LABEL rlhub.sandbox.base=1' "$tarball" "$image" >/dev/null
  log "built $image"
  # Only the current root file system stays cached (each is some 3.5 GB).
  find "$CACHE" -maxdepth 1 -name 'rootfs-*.tar' ! -name "$(basename "$tarball")" -delete
}

install_packages
start_dockerd
build_base_image
