"""python -m f46.demo: see f46.demo.train."""

from .train import cli

if __name__ == "__main__":
    raise SystemExit(cli())
