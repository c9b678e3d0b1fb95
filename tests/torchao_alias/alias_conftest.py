"""conftest.py of scripts/torchao_tests.sh's temporary directory (copied there under that name):
installs the torchao -> f46 alias before torchao's test files are imported
(F46_TORCHAO_CPU=1: the CPU run, see torchao_alias.install)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torchao_alias  # noqa: E402

torchao_alias.install(cpu=os.environ.get("F46_TORCHAO_CPU") == "1")
