#!/usr/bin/env bash
# Installs what stoker needs on a fresh Debian/Ubuntu machine: system packages through
# apt-get (only those missing) and Python packages into a virtual environment at .venv.
# Idempotent and quick when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS="build-essential cmake ninja-build pkg-config libjpeg62-turbo-dev libturbojpeg0-dev libspng-dev libcurl4-openssl-dev zlib1g-dev libcmocka-dev python3-venv python3-dev liblmdb0 lmdb-utils"
# audio and video decoding (optional at build time; the tests encode their clips with ffmpeg)
PKGS="$PKGS libsndfile1-dev libavcodec-dev libavformat-dev libswscale-dev libswresample-dev ffmpeg libffmpeg-nvenc-dev"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Ubuntu names libjpeg-turbo's development package differently.
if echo "$missing" | grep -q libjpeg62-turbo-dev && dpkg-query -W -f='${Status}' libjpeg-turbo8-dev 2>/dev/null | grep -q "install ok installed"; then
  missing=$(echo "$missing" | sed 's/libjpeg62-turbo-dev//')
fi
# python3-venv/python3-dev are only needed when the interpreter lacks venv or headers.
if python3 -c "import venv, sysconfig, os; assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h'))" 2>/dev/null; then
  missing=$(echo "$missing" | sed 's/python3-venv//; s/python3-dev//')
fi
missing=$(echo $missing)
if [ -n "$missing" ]; then
  echo "setup: installing system packages: $missing"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import numpy, PIL, pytest, scikit_build_core, cv2, lz4" 2>/dev/null; then
  echo "setup: installing Python packages into .venv"
  .venv/bin/pip install -q --upgrade pip >/dev/null
  # OpenCV: the reference of the image-effect tests (tests/python/test_effects.py); lz4:
  # real LZ4 blocks for decoders.inflate's tests
  .venv/bin/pip install -q numpy pillow pytest scikit-build-core opencv-python-headless lz4
fi
# The remote-data tests run a local S3-compatible server (moto) on 127.0.0.1.
if ! .venv/bin/python -c "import moto.server, werkzeug" 2>/dev/null; then
  echo "setup: installing moto[server] into .venv (remote-data tests)"
  .venv/bin/pip install -q 'moto[server]'
fi
# `import stoker` from this checkout (the extension is built into python/stoker/ by make).
python/install_pth.sh .venv/bin/python
