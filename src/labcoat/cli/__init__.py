"""The ``labcoat`` command line. Each command group lives in its own module, loaded lazily."""
