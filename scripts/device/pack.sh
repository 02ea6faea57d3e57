#!/usr/bin/env bash
# Builds, on this machine, everything scripts/device/run.sh needs on a lent GPU machine (which has no
# Node, no npm and no network), into .device/ (git-ignored; name it in the device tool's `carry`):
#
#   .device/app.tar.xz      esbuild bundles: bench-node.mjs (scripts/bench-node.ts), compare.mjs,
#                           preflight.mjs, profile.mjs, attention-depth.mjs, draft.mjs, small-batch.mjs,
#                           llama-vulkan.mjs, write-gguf.mjs (scripts/device/*.ts). Rebuilt every time.
#   .device/runtime.tar.xz  node_modules/{webgpu (dawn.node), node-llama-cpp + its dependencies,
#                           @node-llama-cpp/linux-x64-vulkan}, lib/libvulkan.so.1 (Debian's libvulkan1),
#                           lib-fallback/libGLdispatch.so.0 (libglvnd0, used only where the machine lacks
#                           it). Cached: rebuilt when the package versions or the loader change.
#   .device/node.xz         this machine's Node binary (cached by its version).
#   .device/gl.tar          the files of Debian's Vulkan loader and glvnd packages (libvulkan1 libegl1 libglvnd0
#                           libopengl0 libgl1 libglx0 libgles2, amd64, 2.2 MB), which run.sh unpacks into /
#                           where the machine lacks them (the shared H200 notes' set-up). Cached.
#   .device/MANIFEST        versions, sizes, sha256, commit.
#
# Usage: bash scripts/device/pack.sh [--cpu]   (--cpu adds node-llama-cpp's CPU build, for local tests)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
D="$ROOT/.device"
CPU=0
[[ "${1:-}" == "--cpu" ]] && CPU=1
mkdir -p "$D"
STAGE=$(mktemp -d /tmp/device-pack.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
XZ="xz -T0 -6"

step() { echo "[pack] $*" >&2; }

# 1. Bundles (our code is bundled whole; webgpu and node-llama-cpp stay external: they load native
#    addons and find their files by path).
mkdir -p "$STAGE/app/app"
for e in scripts/bench-node.ts scripts/device/preflight.ts scripts/device/compare.ts scripts/device/profile.ts scripts/device/attention-depth.ts scripts/device/draft.ts scripts/device/small-batch.ts scripts/device/llama-vulkan.ts scripts/device/write-gguf.ts; do
  n=$(basename "$e" .ts)
  npx esbuild "$e" --bundle --platform=node --format=esm --target=node20 \
    --external:webgpu --external:node-llama-cpp --log-level=warning \
    --banner:js="import { createRequire as __nodeCreateRequire } from 'node:module'; const require = __nodeCreateRequire(import.meta.url);" \
    --outfile="$STAGE/app/app/$n.mjs"
done
git rev-parse HEAD >"$STAGE/app/app/COMMIT" 2>/dev/null || echo unknown >"$STAGE/app/app/COMMIT"
git status --porcelain >"$STAGE/app/app/DIRTY" 2>/dev/null || true
tar -C "$STAGE/app" -cf - app | $XZ >"$D/app.tar.xz"
step "bundles: $(du -b "$D/app.tar.xz" | cut -f1) bytes"

# 2. Runtime (cached).
VULKAN_SO=$(readlink -f "$(ldconfig -p | awk '/libvulkan.so.1 .*x86-64/ {print $NF; exit}')")
GLD_SO=$(readlink -f "$(ldconfig -p | awk '/libGLdispatch.so.0 .*x86-64/ {print $NF; exit}')" || true)
[[ -f "$VULKAN_SO" ]] || { echo "no libvulkan.so.1 here: apt-get install libvulkan1" >&2; exit 1; }
ver() { node -p "require('./node_modules/$1/package.json').version"; }
KEY="webgpu $(ver webgpu); node-llama-cpp $(ver node-llama-cpp); vulkan-pkg $(ver @node-llama-cpp/linux-x64-vulkan); cpu $CPU; $(basename "$VULKAN_SO"); $(sha256sum scripts/device/copy-runtime.ts | cut -c1-16)"
if [[ -f "$D/runtime.tar.xz" && "$(cat "$D/runtime.key" 2>/dev/null)" == "$KEY" ]]; then
  step "runtime: cached ($KEY)"
else
  step "runtime: building ($KEY); xz of ~150 MB takes a minute or two"
  mkdir -p "$STAGE/rt/lib" "$STAGE/rt/lib-fallback"
  npx tsx scripts/device/copy-runtime.ts "$STAGE/rt" $([[ $CPU == 1 ]] && echo --cpu)
  cp "$VULKAN_SO" "$STAGE/rt/lib/libvulkan.so.1"
  [[ -n "$GLD_SO" && -f "$GLD_SO" ]] && cp "$GLD_SO" "$STAGE/rt/lib-fallback/libGLdispatch.so.0"
  step "runtime staged: $(du -sb "$STAGE/rt" | cut -f1) bytes"
  tar -C "$STAGE/rt" -cf - . | $XZ >"$D/runtime.tar.xz.tmp"
  mv "$D/runtime.tar.xz.tmp" "$D/runtime.tar.xz"
  echo "$KEY" >"$D/runtime.key"
fi

# 3. Node (cached by version and binary hash).
NODE_BIN=$(readlink -f "$(command -v node)")
NKEY="$(node -v) $(sha256sum "$NODE_BIN" | cut -c1-16)"
if [[ -f "$D/node.xz" && "$(cat "$D/node.key" 2>/dev/null)" == "$NKEY" ]]; then
  step "node: cached ($NKEY)"
else
  step "node: compressing $NODE_BIN ($NKEY)"
  $XZ -c "$NODE_BIN" >"$D/node.xz.tmp"
  mv "$D/node.xz.tmp" "$D/node.xz"
  echo "$NKEY" >"$D/node.key"
fi

# 4. The Vulkan loader and glvnd (cached): Debian's packages, unpacked here into one tar of their files
#    and links (no directory entries, no docs), which run.sh unpacks with tar alone where they are missing.
GL_PKGS="libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2"
if [[ -f "$D/gl.tar" && "$(cat "$D/gl.key" 2>/dev/null)" == "$GL_PKGS" ]]; then
  step "gl: cached ($(tar -tf "$D/gl.tar" | grep -c '\.so') libraries)"
else
  step "gl: apt-get download $GL_PKGS (amd64)"
  rm -rf "$STAGE/gl" && mkdir -p "$STAGE/gl/debs" "$STAGE/gl/root" "$STAGE/apt/lists/partial"
  A=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64)
  # This machine's own package lists serve when it is amd64; else a private amd64 list is fetched.
  if [[ "$(dpkg --print-architecture 2>/dev/null)" != amd64 ]]; then
    A+=(-oDir::State::Lists="$STAGE/apt/lists")
    apt-get "${A[@]}" update >&2
  fi
  (cd "$STAGE/gl/debs" && apt-get "${A[@]}" download $GL_PKGS >&2) ||
    (apt-get update >&2 && cd "$STAGE/gl/debs" && apt-get "${A[@]}" download $GL_PKGS >&2) ||
    { echo "[pack] apt-get download $GL_PKGS failed: run.sh needs them on a fresh device machine" >&2; exit 1; }
  for f in "$STAGE"/gl/debs/*.deb; do dpkg-deb -x "$f" "$STAGE/gl/root"; done
  rm -rf "$STAGE/gl/root/usr/share/doc" "$STAGE/gl/root/usr/share/bug" "$STAGE/gl/root/usr/share/lintian"
  (cd "$STAGE/gl/root" && find . ! -type d | sort | tar -cf "$D/gl.tar.tmp" --owner=0 --group=0 -T -)
  mv "$D/gl.tar.tmp" "$D/gl.tar"
  echo "$GL_PKGS" >"$D/gl.key"
  rm -rf "$D/gl" # the packages themselves, as an earlier pack.sh carried them
fi

{
  echo "packed $(date -u +%FT%TZ) from commit $(cat "$STAGE/app/app/COMMIT")"
  echo "node: $NKEY"
  echo "runtime: $KEY"
  for f in app.tar.xz runtime.tar.xz node.xz gl.tar; do
    echo "$f $(du -b "$D/$f" | cut -f1) $(sha256sum "$D/$f" | cut -c1-16)"
  done
} >"$D/MANIFEST"
cat "$D/MANIFEST" >&2
TOTAL=$(du -sb "$D" | cut -f1)
TREE=$(git ls-files -z --cached --others --exclude-standard | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
step "carry .device: $TOTAL bytes ($((TOTAL / 1048576)) MiB); working tree $TREE bytes; together $(((TOTAL + TREE) / 1048576)) MiB of the 64 MiB limit"
if ((TOTAL + TREE > 64 * 1048576)); then
  echo "[pack] OVER the 64 MiB limit" >&2
  exit 1
fi
