#!/usr/bin/env bash
# Make the sandbox backends' host requirements real on a Debian machine, offline and idempotently:
#   1. install bubblewrap (local backend namespaces) and docker.io (docker backend) if missing;
#   2. start dockerd in the background if no engine answers, and wait until it does;
#   3. build the offline base image `rlhub-sandbox-base:py3.11` by `docker import` of a minimal
#      root filesystem made from this machine's /usr/bin/python3.11, its shared libraries (ldd)
#      and /usr/lib/python3.11 (no registry pull is needed).
# Fast when everything is already in place. Called by .ci/run; safe to run by hand as root.
set -euo pipefail

IMAGE="${RLHUB_SANDBOX_BASE_IMAGE:-rlhub-sandbox-base:py3.11}"
DOCKERD_LOG="${RLHUB_DOCKERD_LOG:-/tmp/rlhub-dockerd.log}"
log() { echo "[docker-setup] $*" >&2; }

install_packages() {
  local missing=()
  command -v bwrap >/dev/null || missing+=(bubblewrap)
  command -v dockerd >/dev/null || missing+=(docker.io)
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  local apt=(apt-get -o DPkg::Lock::Timeout=600 -y -q)  # other installers may hold the lock
  "${apt[@]}" install "${missing[@]}" >/dev/null 2>&1 || {
    "${apt[@]}" update >/dev/null
    "${apt[@]}" install "${missing[@]}" >/dev/null
  }
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

# Copy FILE and every shared library ldd lists for it into ROOT under their resolved directories
# (merged /usr: /lib and /lib64 are symlinks into /usr), dereferencing the files themselves.
copy_resolved() {
  local root=$1 file=$2 dir
  dir=$(realpath "$(dirname "$file")")
  mkdir -p "$root$dir"
  cp -L "$file" "$root$dir/$(basename "$file")"
}
copy_with_libs() {
  local root=$1 file=$2 lib
  copy_resolved "$root" "$file"
  for lib in $(ldd "$file" 2>/dev/null | grep -o '/[^ ]*' || true); do
    [ -e "$lib" ] && copy_resolved "$root" "$lib"
  done
}

build_base_image() {
  if docker image inspect "$IMAGE" >/dev/null 2>&1; then return 0; fi
  log "building $IMAGE from /usr/bin/python3.11"
  local root; root=$(mktemp -d)
  trap 'rm -rf "$root"' RETURN
  mkdir -p "$root"/{tmp,work,proc,dev,etc,usr/bin,usr/lib,usr/lib64}
  ln -s usr/bin "$root/bin"; ln -s usr/lib "$root/lib"; ln -s usr/lib64 "$root/lib64"
  chmod 1777 "$root/tmp"
  local tool
  for tool in /usr/bin/python3.11 /usr/bin/bash /usr/bin/dash /usr/bin/cat /usr/bin/sleep /usr/bin/ls; do
    copy_with_libs "$root" "$tool"
  done
  ln -sf dash "$root/usr/bin/sh"
  cp -a /usr/lib/python3.11 "$root/usr/lib/"
  rm -rf "$root"/usr/lib/python3.11/{test,idlelib,tkinter,turtledemo,ensurepip,site-packages,dist-packages}
  find "$root/usr/lib/python3.11" -name __pycache__ -prune -exec rm -rf {} + 2>/dev/null || true
  # Extension modules need their own libraries (libffi for ctypes, libssl, ...).
  local so
  for so in /usr/lib/python3.11/lib-dynload/*.so; do copy_with_libs "$root" "$so"; done
  ln -sf python3.11 "$root/usr/bin/python3"
  ln -sf python3.11 "$root/usr/bin/python"
  echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
  echo 'root:x:0:' >"$root/etc/group"
  tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' --change 'ENV LANG=C.UTF-8' \
    --change 'WORKDIR /work' - "$IMAGE" >/dev/null
  log "built $IMAGE"
}

install_packages
start_dockerd
build_base_image
