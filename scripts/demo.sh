#!/usr/bin/env bash
# Set up (scripts/setup_env.sh), then run the f46 demo: python -m f46.demo [args].
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup_env.sh
exec "${F46_VENV:-$ROOT/.venv}/bin/python" -m f46.demo "$@"
