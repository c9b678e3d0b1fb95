"""python -m f46.demo: see f46.demo.train."""

from .train import main

if __name__ == "__main__":
    main()
