"""``python -m labcoat`` behaves exactly like the ``labcoat`` script."""

from labcoat.cli.main import run

if __name__ == "__main__":
    run()
