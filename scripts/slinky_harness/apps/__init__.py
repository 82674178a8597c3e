"""Programs built on the harness (``python -m slinky_harness.apps.<name>``): demo, kind, benchmarks, release."""
