#!/usr/bin/env bash
# Makes `import stoker` work in a virtual environment from this checkout: writes a .pth
# file pointing at python/ into the interpreter's site-packages. The extension module
# itself is built by CMake (`make`) into python/stoker/. Idempotent.
#   usage: python/install_pth.sh [PYTHON]   (default: .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:-.venv/bin/python}"
site=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
echo "$(pwd)/python" > "$site/stoker-dev.pth"
